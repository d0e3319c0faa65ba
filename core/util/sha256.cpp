// A self-contained SHA-256 (FIPS 180-4): portable rounds, and the x86 SHA extensions where the
// processor has them (chosen once at run time).
#include "util/sha256.h"

#include "util/error.h"

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define TB_SHA256_NI 1
#endif

namespace tb {
namespace {

constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

uint32_t rotr(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

void compressPortable(uint32_t* state, const uint8_t* block)
{
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
        w[i] = uint32_t(block[4 * i]) << 24 | uint32_t(block[4 * i + 1]) << 16 |
               uint32_t(block[4 * i + 2]) << 8 | uint32_t(block[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
        const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
    for (int i = 0; i < 64; ++i) {
        const uint32_t t1 =
            h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[i] + w[i];
        const uint32_t t2 =
            (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    const uint32_t add[8] = {a, b, c, d, e, f, g, h};
    for (int i = 0; i < 8; ++i)
        state[i] += add[i];
}

#ifdef TB_SHA256_NI
bool detectShaNi()
{
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return false;
    const bool sse41 = (c & (1u << 19)) != 0, ssse3 = (c & (1u << 9)) != 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return false;
    return sse41 && ssse3 && (b & (1u << 29)) != 0;  // CPUID.7.0:EBX[29] = SHA
}

// The SHA extensions keep the state as two vectors, (A, B, E, F) and (C, D, G, H); each
// sha256rnds2 does two rounds, sha256msg1/msg2 extend the message schedule four words at a time.
__attribute__((target("sha,sse4.1,ssse3"))) void compressShaNi(uint32_t* state,
                                                               const uint8_t* blocks, size_t count)
{
    const __m128i byteSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state));
    __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state + 4));
    const __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    const __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    for (size_t n = 0; n < count; ++n, blocks += 64) {
        const __m128i abefStart = abef, cdghStart = cdgh;
        __m128i m[4];
        for (int g = 0; g < 16; ++g) {
            __m128i& w = m[g % 4];
            if (g < 4) {
                w = _mm_shuffle_epi8(
                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks + 16 * g)), byteSwap);
            } else {
                const __m128i& previous = m[(g + 3) % 4];
                w = _mm_sha256msg1_epu32(w, m[(g + 1) % 4]);
                w = _mm_add_epi32(w, _mm_alignr_epi8(previous, m[(g + 2) % 4], 4));
                w = _mm_sha256msg2_epu32(w, previous);
            }
            __m128i k =
                _mm_add_epi32(w, _mm_loadu_si128(reinterpret_cast<const __m128i*>(kRound + 4 * g)));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, k);
            k = _mm_shuffle_epi32(k, 0x0E);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, k);
        }
        abef = _mm_add_epi32(abef, abefStart);
        cdgh = _mm_add_epi32(cdgh, cdghStart);
    }
    const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    dcba = _mm_blend_epi16(feba, dchg, 0xF0);
    hgfe = _mm_alignr_epi8(dchg, feba, 8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(state), dcba);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(state + 4), hgfe);
}
#endif

}  // namespace

bool Sha256::hardwareAvailable()
{
#ifdef TB_SHA256_NI
    static const bool available = detectShaNi();
    return available;
#else
    return false;
#endif
}

Sha256::Sha256(bool useHardware) : m_hardware(useHardware && hardwareAvailable()) {}

void Sha256::update(const void* data, size_t size)
{
    const auto* bytes = static_cast<const uint8_t*>(data);
    m_length += size;
    while (size > 0) {
        if (m_used == 0 && size >= 64) {  // whole blocks straight from the input
            const size_t blocks = size / 64;
            compress(bytes, blocks);
            bytes += 64 * blocks;
            size -= 64 * blocks;
            continue;
        }
        const size_t take = std::min(size, 64 - m_used);
        std::memcpy(m_block.data() + m_used, bytes, take);
        m_used += take;
        bytes += take;
        size -= take;
        if (m_used == 64) {
            compress(m_block.data(), 1);
            m_used = 0;
        }
    }
}

std::string Sha256::hex()
{
    const uint64_t bits = m_length * 8;
    const uint8_t pad = 0x80;
    update(&pad, 1);
    const uint8_t zero = 0;
    while (m_used != 56)
        update(&zero, 1);
    uint8_t length[8];
    for (int i = 0; i < 8; ++i)
        length[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
    update(length, 8);
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (uint32_t word : m_state)
        for (int shift = 28; shift >= 0; shift -= 4)
            out.push_back(digits[(word >> shift) & 0xf]);
    return out;
}

void Sha256::compress(const uint8_t* blocks, size_t count)
{
#ifdef TB_SHA256_NI
    if (m_hardware) {
        compressShaNi(m_state.data(), blocks, count);
        return;
    }
#endif
    for (size_t n = 0; n < count; ++n)
        compressPortable(m_state.data(), blocks + 64 * n);
}

std::string sha256Hex(const std::string& bytes)
{
    Sha256 hash;
    hash.update(bytes.data(), bytes.size());
    return hash.hex();
}

std::string sha256File(const std::string& path, const std::atomic<bool>* stop)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        fail(path, ": cannot open (", std::strerror(errno), ")");
    Sha256 hash;
    std::vector<char> buffer(1 << 20);
    while (in) {
        if (stop && stop->load())
            return "";
        in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        hash.update(buffer.data(), static_cast<size_t>(in.gcount()));
    }
    if (in.bad())
        fail(path, ": read error");
    return hash.hex();
}

}  // namespace tb
