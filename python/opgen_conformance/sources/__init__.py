"""Sample sources: each makes calls of one overload on CPU, seeded by the
caller (Note [Sample determinism] in samples.py), which samples.py orders
and budgets into a task's sample list. opinfo.py traces OpInfo's samples,
handmade.py writes calls by hand, schema.py synthesizes them from the schema.
"""
