"""Out-of-range command-line numbers are refused by argparse, naming the value and the range
(issue 27: --port 99999 listened elsewhere or crashed with OverflowError; --epochs -3 passed)."""

import pytest

from cli.main import main


@pytest.mark.parametrize("argv, shown", [
    (["serve", "--port", "99999"], "1..65535"), (["serve", "--port", "0"], "1..65535"),
    (["serve", "--workers", "0"], "at least 1"), (["recommend", "x", "--k", "0"], "at least 1"),
    (["train", "--interactions", "i.csv", "--items", "x.csv", "--epochs", "-3"], "at least 1"),
])
def test_out_of_range_is_refused_naming_value_and_range(argv, shown, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert shown in err and argv[-1] in err, err
