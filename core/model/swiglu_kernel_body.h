// The body of model/swiglu_kernel.cpp, compiled once per instruction set by model/per_isa.h:
// silu(g) * u and its two gradients over a range of elements, in fp32 lanes. No include guard on
// purpose: each instruction set's namespace gets its own.

#include "model/vec_body.h"
#include "model/vec_math_body.h"

// The sigmoid from e^-|g| (never above 1, so expOf's range holds): 1 / (1 + e) for g >= 0, e / (1
// + e) below.
inline VecF sigmoidOf(VecF g)
{
    VecU bits;
    std::memcpy(&bits, &g, sizeof bits);
    bits &= 0x7fffffffu;
    VecF magnitude;
    std::memcpy(&magnitude, &bits, sizeof magnitude);
    const VecF e = expOf(-magnitude);
    const VecF r = 1.0f / (e + 1.0f);
    return g >= 0.0f ? r : e * r;
}

// The tail's elements through one vector of zeros, so they take the same arithmetic.
template <typename T> VecF loadTail(const T* p, int64_t n)
{
    alignas(64) float lanes[kLanes] = {};
    for (int64_t i = 0; i < n; ++i)
        lanes[i] = widen(p[i]);
    return loadv(lanes);
}

template <typename T> void storeTail(T* p, VecF v, int64_t n)
{
    alignas(64) float lanes[kLanes];
    store(lanes, v);
    for (int64_t i = 0; i < n; ++i)
        p[i] = narrowTo(lanes[i], p);
}

template <typename T> void swigluRange(const T* g, const T* u, T* out, int64_t n)
{
    const int64_t full = n - n % kLanes;
    for (int64_t i = 0; i < full; i += kLanes) {
        const VecF gv = loadv(g + i);
        store(out + i, gv * sigmoidOf(gv) * loadv(u + i));
    }
    if (full < n) {
        const VecF gv = loadTail(g + full, n - full);
        storeTail(out + full, gv * sigmoidOf(gv) * loadTail(u + full, n - full), n - full);
    }
}

// dg = dy u s (1 + g (1 - s)), du = dy g s, s = sigmoid(g); either output may be null.
template <typename T>
void swigluBackwardRange(const T* dy, const T* g, const T* u, T* dg, T* du, int64_t n)
{
    auto one = [&](VecF d, VecF gv, VecF uv, VecF& dgv, VecF& duv) {
        const VecF s = sigmoidOf(gv);
        dgv = d * uv * s * (gv * (1.0f - s) + 1.0f);
        duv = d * gv * s;
    };
    const int64_t full = n - n % kLanes;
    VecF dgv, duv;
    for (int64_t i = 0; i < full; i += kLanes) {
        one(loadv(dy + i), loadv(g + i), loadv(u + i), dgv, duv);
        if (dg)
            store(dg + i, dgv);
        if (du)
            store(du + i, duv);
    }
    if (full < n) {
        const int64_t k = n - full;
        one(loadTail(dy + full, k), loadTail(g + full, k), loadTail(u + full, k), dgv, duv);
        if (dg)
            storeTail(dg + full, dgv, k);
        if (du)
            storeTail(du + full, duv, k);
    }
}
