"""sweep's dropped-combination example says one device in the singular ('on 1 device')."""

from scalesim.cli.main import main


def test_the_dropped_example_on_one_device_is_singular(capsys):
    # a swept tp: with --tp 2 the row on 1 device is said by predict's left-out note alone
    # (before session 50 also 'note: 1 combination dropped: 1 breaks a layout rule (e.g. tp 2 x
    # pp 1 on 1 device: tp x pp does not divide the devices)'; tests/test_sweep_drops_said_once50)
    assert main(["sweep", "--hardware", "dgx-a100", "--workload", "gpt-1.7b", "--tp-values",
                 "1,2", "--devices", "1-4"]) == 0
    err = capsys.readouterr().err
    assert "e.g. tp 2 x pp 1 on 1 device: tp x pp does not divide the devices" in err
    assert "1 devices" not in err
