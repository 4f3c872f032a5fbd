"""Stage 5, paper: from evaluation CSVs to the paper's artifacts and verdicts.

- :mod:`.plan`: which training runs each artifact needs, from the workflow config;
- :mod:`.artifacts`: where each artifact's inputs live, and how it is assembled; :mod:`.tables`,
  :mod:`.figures`, :mod:`.table1`: the tables and figures themselves;
- :mod:`.compare`, :mod:`.yardstick`: each number against the published one, an equivalence test with a
  declared margin, and the gate; :mod:`.gate_rates`: the gate's error rates, by simulation;
  :mod:`.claims`: the paper's sentences, tested with the uncertainty of seeds;
- :mod:`.recipe_card`, :mod:`.recipe_card_baselines`: the recipe card, every run next to the authors' recipe.
"""
