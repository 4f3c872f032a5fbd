"""Stage 5, paper: from evaluation CSVs to the paper's artifacts and verdicts.

- :mod:`.plan`: which training runs each artifact needs, from the workflow config;
- :mod:`.artifacts`: where each artifact's inputs live, and how it is assembled; :mod:`.tables`,
  :mod:`.figures`, :mod:`.table1`: the tables and figures themselves;
- :mod:`.compare`, :mod:`.yardstick`: each number against the published one, with its stated tolerance;
  :mod:`.claims`: the paper's sentences, tested;
- :mod:`.card`, :mod:`.card_baselines`: the recipe card, every run next to the authors' recipe.
"""
