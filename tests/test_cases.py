import pytest

from harness.loading.cases import CaseError, format_case, parse_case
from harness.loading.directives import parse_directives


def test_parse_public_case_string():
    case = parse_case("m: [96, 128]; n: [128, 256]; k: [256, 512]; g: 2; seed: 1111")
    assert case == {"m": [96, 128], "n": [128, 256], "k": [256, 512], "g": 2, "seed": 1111}


def test_round_trip():
    text = "size: 1024; seed: 5"
    assert format_case(parse_case(text)) == text


def test_trailing_semicolon_and_spaces():
    assert parse_case(" size : 8 ; seed: 1 ; ") == {"size": 8, "seed": 1}


@pytest.mark.parametrize("bad", ["", "size 8", ": 3", "m: [1, 2"])
def test_bad_case_strings(bad):
    with pytest.raises(CaseError):
        parse_case(bad)


def test_directives_from_first_comment_block():
    source = "#!POPCORN leaderboard nvfp4_group_gemm\n#!POPCORN gpu B200\n# note\nimport torch\n#!POPCORN gpu H100\n"
    d = parse_directives(source)
    assert d.leaderboard == "nvfp4_group_gemm"
    assert d.gpus == ["B200"]  # the later directive is after code: ignored


def test_directive_synonyms_and_c_style():
    d = parse_directives("//!POPCORN leaderboard vectoradd\n//!POPCORN gpus H100, B200\n")
    assert d.leaderboard == "vectoradd" and d.gpus == ["H100", "B200"]


def test_no_directives():
    d = parse_directives("import torch\n#!POPCORN leaderboard x\n")
    assert d.leaderboard is None and d.gpus == []
