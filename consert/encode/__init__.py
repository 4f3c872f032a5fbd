"""Stage 2, encode: sentences to vectors.

- :mod:`.models`: finding and loading encoders (local first, a clear error offline);
- :mod:`.pooling`: token vectors to sentence vectors, named by hidden-state index;
- :mod:`.precision`, :mod:`.ort_engine`: precision and engine, measured on the machine;
- :mod:`.batching`: token ids once per text, padded batches;
- :mod:`.encoder`: :class:`~consert.encode.encoder.SentenceEncoder`, each distinct sentence once;
- :mod:`.cache`, :mod:`.rank_sums`: the vector cache, with the top-k masking statistics of one pass.
"""
