// Seeded 64-bit hashing and a small PRNG for data curation, byte-for-byte the same on every
// platform (internal to core/data; not for cryptography).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace tb {

// The SplitMix64 finalizer: a bijection on 64 bits with full avalanche.
inline uint64_t mix64(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// 8 bytes as a little-endian integer, whatever the host's byte order.
inline uint64_t loadLe64(const char* p)
{
    uint64_t v;
    std::memcpy(&v, p, 8);
    if constexpr (std::endian::native == std::endian::big)
        v = __builtin_bswap64(v);
    return v;
}

// Hash of bytes under a seed: each 8-byte word goes through mix64 and is folded into a running
// state that is rotated and multiplied, so order and length matter. Stable across platforms and
// runs.
inline uint64_t hashBytes(std::string_view bytes, uint64_t seed = 0)
{
    constexpr uint64_t kMul = 0x9e3779b97f4a7c15ULL;  // 2^64 / golden ratio, odd
    uint64_t h = seed ^ (bytes.size() * kMul);
    const char* p = bytes.data();
    size_t n = bytes.size();
    for (; n >= 8; p += 8, n -= 8)
        h = std::rotl(h ^ mix64(loadLe64(p)), 29) * kMul;
    if (n) {
        uint64_t tail = 0;
        for (size_t i = 0; i < n; ++i)
            tail |= uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
        h = std::rotl(h ^ mix64(tail ^ 0xff), 29) * kMul;
    }
    return mix64(h);
}

// SplitMix64: a counter through mix64. Tiny, fast, well distributed, and its sequence for a seed is
// fixed by this code rather than by a standard library (std::uniform_* differ between vendors).
class SplitMix64 {
public:
    explicit SplitMix64(uint64_t seed) : m_state(seed) {}

    uint64_t next()
    {
        m_state += 0x9e3779b97f4a7c15ULL;
        return mix64(m_state);
    }

    // Uniform in [0, bound) without modulo bias (rejects the short top range); bound > 0.
    uint64_t below(uint64_t bound)
    {
        const uint64_t limit = -bound % bound;  // 2^64 mod bound
        for (;;) {
            const uint64_t x = next();
            if (x >= limit)
                return x % bound;
        }
    }

private:
    uint64_t m_state;
};

}  // namespace tb
