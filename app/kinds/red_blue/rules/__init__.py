"""Red-blue competitions: the rules, free of the web, database and task layers.

Blue participants write defenses (system prompts), red participants write attacks (user
messages); a match is one call of the target model judged by every category of the judge
suite. `config` validates a challenge's settings, `judging` turns verifier results into
verdicts, points and team standings, `pairing` chooses a submission's opponents, and `ratings`
fits Bradley-Terry ratings with bootstrap intervals and ranks. docs/redblue.md has the rules.
"""
