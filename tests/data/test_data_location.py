"""Where the workflow finds the STS data by itself: the configured folder, $CONSERT_DATA, a SentEval folder
beside the checkout, else a download; with none of them, one line that says what to do."""

from __future__ import annotations

import shutil

import pytest

from consert.data.download import locate_senteval
from consert.data.senteval import DATA_ENV_VAR, DEFAULT_DATA_DIR, DataFormatError
from tests.fixtures import write_senteval_tree


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A user's machine: a checkout in ``work/repo``, run from it, no $CONSERT_DATA."""
    checkout = tmp_path / "work" / "repo"
    checkout.mkdir(parents=True)
    monkeypatch.chdir(checkout)
    monkeypatch.delenv(DATA_ENV_VAR, raising=False)
    return checkout


def test_the_default_folder_is_found_beside_the_checkout_when_absent(machine):
    shared = write_senteval_tree(machine.parent / "shared" / "data" / "senteval", pairs_per_file=4)
    assert locate_senteval(DEFAULT_DATA_DIR, machine, download=False) == (shared / "downstream").resolve()
    clone = write_senteval_tree(machine.parent / "SentEval" / "data", pairs_per_file=4)
    shutil.rmtree(shared)
    assert locate_senteval("data/senteval", machine, download=False) == (clone / "downstream").resolve()


def test_the_default_folder_itself_wins_over_the_one_beside_and_the_variable_over_both(machine, monkeypatch):
    write_senteval_tree(machine.parent / "shared" / "data" / "senteval", pairs_per_file=4)
    own = write_senteval_tree(machine / "data" / "senteval", pairs_per_file=4)
    assert locate_senteval(DEFAULT_DATA_DIR, machine, download=False).resolve() == (own / "downstream").resolve()
    elsewhere = write_senteval_tree(machine.parent / "elsewhere", pairs_per_file=4)
    monkeypatch.setenv(DATA_ENV_VAR, str(elsewhere))
    assert locate_senteval(DEFAULT_DATA_DIR, machine, download=False) == elsewhere / "downstream"


def test_a_configured_folder_is_used_as_given_even_when_data_is_beside(machine):
    write_senteval_tree(machine.parent / "shared" / "data" / "senteval", pairs_per_file=4)
    mine = write_senteval_tree(machine / "mine", pairs_per_file=4)
    assert locate_senteval("mine", machine, download=False).resolve() == (mine / "downstream").resolve()
    with pytest.raises(DataFormatError, match="the given path"):
        locate_senteval("missing", machine, download=False)


def test_no_data_anywhere_says_what_to_do_in_one_line(machine):
    with pytest.raises(DataFormatError) as raised:
        locate_senteval(DEFAULT_DATA_DIR, machine, download=False)
    message = str(raised.value)
    assert "\n" not in message and "consert download-data" in message and "--config data_dir=DIR" in message
    assert str(machine.parent / "shared" / "data" / "senteval") in message
    assert not (machine / "data").exists()  # nothing half-made
