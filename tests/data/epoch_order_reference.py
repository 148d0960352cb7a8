#!/usr/bin/env python3
"""Prints EpochOrder(seed, epoch, size) computed independently of the C++ code.

A plain transcription of the algorithm runtime/kindling/data/epoch_order.cc
documents (SplitMix64 seeding and xoshiro256** as in
runtime/kindling/tensor/generator.cc, Lemire's unbiased bounded draws,
Fisher-Yates from the back), used to pin the orders in epoch_order_test.cc:

    python3 tests/data/epoch_order_reference.py
"""

MASK = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15


def mix(value):
    """SplitMix64's finalizer."""
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & MASK
    return value ^ (value >> 31)


def rotate_left(value, bits):
    return ((value << bits) | (value >> (64 - bits))) & MASK


class Generator:
    """kindling::Generator: xoshiro256** seeded through SplitMix64."""

    def __init__(self, seed):
        self.state = []
        for _ in range(4):
            seed = (seed + GOLDEN_GAMMA) & MASK
            self.state.append(mix(seed))

    def next_bits(self):
        s = self.state
        result = (rotate_left((s[1] * 5) & MASK, 7) * 9) & MASK
        shifted = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= shifted
        s[3] = rotate_left(s[3], 45)
        return result


def uniform_below(generator, bound):
    """Uniform in [0, bound): keep the high word of bits * bound, redrawing
    when the low word falls in the (2^64 mod bound) values that would bias."""
    threshold = ((1 << 64) - bound) % bound
    while True:
        product = generator.next_bits() * bound
        if (product & MASK) >= threshold:
            return product >> 64


def epoch_order(seed, epoch, size):
    generator = Generator(mix(mix(seed) ^ ((epoch + GOLDEN_GAMMA) & MASK)))
    order = list(range(size))
    for i in range(size - 1, 0, -1):
        j = uniform_below(generator, i + 1)
        order[i], order[j] = order[j], order[i]
    return order


if __name__ == "__main__":
    for seed, epoch, size in [(0, 0, 10), (42, 3, 10)]:
        print(f"EpochOrder({seed}, {epoch}, {size}) = "
              f"{epoch_order(seed, epoch, size)}")
