"""metalcall.numpy.random: a counter-based generator (the same numbers on every backend for a
seed) — default_rng(seed).random/normal/integers/uniform — and metallic's randn/rand/seed.
Written in _random.py; this module is its public names only."""

from ._random import Generator, default_rng, integers, normal, rand, randint, randn, random, seed

Generator.__module__ = __name__

__all__ = ["Generator", "default_rng", "integers", "normal", "rand", "randint", "randn", "random", "seed"]
