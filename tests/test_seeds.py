from harness.judging.seeds import SeedPlan


def test_public_first_call_uses_the_case_seed():
    plan = SeedPlan(1111)
    assert plan.seed(0) == 1111
    assert plan.seed(1) != 1111 and plan.seed(1) != plan.seed(2)


def test_public_seeds_are_reproducible():
    assert [SeedPlan(5).seed(i) for i in range(5)] == [SeedPlan(5).seed(i) for i in range(5)]


def test_secret_seeds_depend_on_the_secret_only_the_judge_has():
    a, b = SeedPlan(5, b"a" * 32), SeedPlan(5, b"b" * 32)
    assert a.seed(0) != 5 and a.seed(0) != SeedPlan(5).seed(0)
    assert [a.seed(i) for i in range(4)] != [b.seed(i) for i in range(4)]
    assert a.seed(3) == SeedPlan(5, b"a" * 32).seed(3)


def test_seeds_fit_generators():
    assert all(0 <= SeedPlan(s, b"k").seed(i) < 2**31 for s in range(3) for i in range(50))


def test_each_ranked_run_draws_its_own_key_and_a_recorded_nonce_gives_it_again():
    from harness.judging.seeds import new_run_nonce, run_key

    board = b"s" * 32
    first, second = new_run_nonce(), new_run_nonce()
    assert first != second and len(first) == 32
    assert run_key(board, first) != run_key(board, second) != board
    assert run_key(board, first) == run_key(board, first)
    assert run_key(b"t" * 32, first) != run_key(board, first)  # the board's secret still needed
    one, two = SeedPlan(5, run_key(board, first)), SeedPlan(5, run_key(board, second))
    assert [one.seed(i) for i in range(4)] != [two.seed(i) for i in range(4)]
