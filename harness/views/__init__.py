"""How results are shown to people, for the commands, the contest server and the web board
alike: the terminal report (report, with brief's two-line notes), the markdown summary,
and the ranked boards' data (boards)."""
