"""What a run reads beyond the STS sets, as each file's message names it: the source that fetches a file of its name
(into the paper's place by a workflow job, elsewhere by the command with that place), and for any other file only
that it must be put there."""

from __future__ import annotations

from pathlib import Path

from consert.data.inputs import blocking, file_input, wordnet_input


def test_each_file_is_named_by_the_source_that_fetches_it_or_by_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    paper = file_input("data/glove/glove.840B.300d.txt", "baselines.glove")
    assert (paper.title, paper.job, paper.command) == (
        "GloVe 840B (300d)",
        "glove_data",
        "run `consert download-data --glove`",
    )
    elsewhere = file_input("/scratch/vectors/glove.840B.300d.txt", "baselines.glove")
    assert elsewhere.title == "GloVe 840B (300d)" and elsewhere.job == ""
    assert elsewhere.command == "run `consert download-data --glove /scratch/vectors`"
    corpus = file_input("/scratch/wiki1m_for_simcse.txt", "train_texts")
    assert corpus.title == "SimCSE's 1M Wikipedia sentences" and corpus.command.endswith(
        "--wiki1m /scratch/wiki1m_for_simcse.txt`"
    )
    for path, key in (("data/glove.6B.300d.txt", "baselines.glove"), ("my-corpus.txt", "train_texts"),
                      ("data/nli/my_pairs.jsonl", "nli_files")):  # fmt: skip
        other = file_input(path, key)
        assert (other.title, other.job, other.command) == (key, "", f"put the file there (the config's {key})")
    assert blocking([paper, elsewhere]) == [elsewhere]
    Path("data/glove").mkdir(parents=True)
    Path("data/glove/glove.840B.300d.txt").write_text("the 0.1\n")
    assert file_input("data/glove/glove.840B.300d.txt", "baselines.glove").present


def test_a_wordnet_folder_without_the_database_is_named_for_what_it_lacks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "nltk_data"
    (folder / "corpora").mkdir(parents=True)
    missing = wordnet_input(str(folder))
    assert not missing.present and missing.job == ""
    assert missing.command == "the folder holds no WordNet 3.0 database (index.adj, data.adj): name one that does"
    (folder / "corpora" / "wordnet").mkdir()
    for name in ("index.adj", "data.adj"):
        (folder / "corpora" / "wordnet" / name).write_text("  1 license\n")
    found = wordnet_input(str(folder))  # an NLTK data folder: its corpora/wordnet
    assert found.present and found.location == str(folder / "corpora" / "wordnet")
