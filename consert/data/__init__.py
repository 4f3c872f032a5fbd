"""Stage 1, data: the seven STS sets (:mod:`.senteval`), NLI training files (:mod:`.nli`), and their
downloads for users online (:mod:`.download`). Nothing here knows about models."""
