// The body of the decoding attention kernel (attention_kernel.h), written once in GCC's vector
// extensions and compiled once per instruction set: model/attention_kernel.cpp includes this file
// inside a namespace that defines kLanes (floats per vector register) and under that set's
// `#pragma GCC target`. No include guard on purpose; nothing else includes it.

#include "model/vec_body.h"
#include "model/vec_math_body.h"

// scores[j] = scale * q.k_j for the keys j < keys that `allowed` (null: all; else allowed[j *
// mPos]) lets the query see, -inf for the others; kLanes keys at a time, their sums folded
// together. Returns the largest score.
template <typename T>
float scoresOf(const float* q, const T* k, int64_t kPos, const bool* allowed, int64_t mPos,
               int64_t keys, int64_t dim, float scale, float* scores)
{
    const int64_t full = dim - dim % kLanes;
    float best = -__builtin_inff();
    VecF acc[kLanes];
    float dots[kLanes];
    for (int64_t j0 = 0; j0 < keys; j0 += kLanes) {
        const int n = keys - j0 < kLanes ? static_cast<int>(keys - j0) : kLanes;
        for (int i = 0; i < n; ++i) {
            VecF dot{};  // in a register: the keys' sums stay independent of each other
            if (!allowed || allowed[(j0 + i) * mPos]) {
                const T* kj = k + (j0 + i) * kPos;
                for (int64_t d = 0; d < full; d += kLanes)
                    dot += loadv(q + d) * loadv(kj + d);
            }
            acc[i] = dot;
        }
        sums(acc, n, dots);
        for (int i = 0; i < n; ++i) {
            const int64_t j = j0 + i;
            if (allowed && !allowed[j * mPos]) {
                scores[j] = -__builtin_inff();
                continue;
            }
            float s = dots[i];
            for (int64_t d = full; d < dim; ++d)
                s += q[d] * widen(k[j * kPos + d]);
            scores[j] = s * scale;
            best = scores[j] > best ? scores[j] : best;
        }
    }
    return best;
}

// p[j] = e^(scores[j] - best) in place (0 for -inf); returns the sum of the p.
inline float expAndSum(float* scores, int64_t keys, float best)
{
    VecF total{};
    int64_t j = 0;
    for (; j + kLanes <= keys; j += kLanes) {
        const VecF p = expOf(loadv(scores + j) - best);
        store(scores + j, p);
        total += p;
    }
    if (j < keys) {  // the last few through a padded vector
        float last[kLanes];
        for (int i = 0; i < kLanes; ++i)
            last[i] = j + i < keys ? scores[j + i] : -__builtin_inff();
        const VecF p = expOf(loadv(last) - best);
        store(last, p);
        total += p;
        for (int64_t i = 0; j + i < keys; ++i)
            scores[j + i] = last[i];
    }
    float sum = 0;
    for (int i = 0; i < kLanes; ++i)
        sum += total[i];
    return sum;
}

// out[0 .. NV * kLanes) = sum_j p[j] v_j[0 .. NV * kLanes), keys with p = 0 (masked) not read.
template <int NV, typename T>
inline void weightedPart(const float* p, const T* v, int64_t vPos, int64_t keys, float* out)
{
    VecF acc[NV];
    for (int i = 0; i < NV; ++i)
        acc[i] = VecF{};
    for (int64_t j = 0; j < keys; ++j) {
        if (p[j] == 0.0f)
            continue;
        const VecF w = splat(p[j]);
        const T* vj = v + j * vPos;
        for (int i = 0; i < NV; ++i)
            acc[i] += w * loadv(vj + i * kLanes);
    }
    for (int i = 0; i < NV; ++i)
        store(out + i * kLanes, acc[i]);
}

// out[d] = sum_j p[j] v_j[d] for d < dim: up to four vectors of each value row at a time.
template <typename T>
void weightedSum(const float* p, const T* v, int64_t vPos, int64_t keys, int64_t dim, float* out)
{
    int64_t d = 0;
    for (; d + 4 * kLanes <= dim; d += 4 * kLanes)
        weightedPart<4>(p, v + d, vPos, keys, out + d);
    switch ((dim - d) / kLanes) {
    case 3:
        weightedPart<3>(p, v + d, vPos, keys, out + d);
        break;
    case 2:
        weightedPart<2>(p, v + d, vPos, keys, out + d);
        break;
    case 1:
        weightedPart<1>(p, v + d, vPos, keys, out + d);
        break;
    default:
        break;
    }
    for (d += (dim - d) / kLanes * kLanes; d < dim; ++d) {
        float s = 0;
        for (int64_t j = 0; j < keys; ++j)
            if (p[j] != 0.0f)
                s += p[j] * widen(v[j * vPos + d]);
        out[d] = s;
    }
}

// Every query of sequence `row` that kv head g serves (attention_kernel.h's attendKvHead).
template <typename T> void attendAll(const AttentionArgs& a, int64_t row, int64_t g, float* scratch)
{
    const int64_t group = a.heads / a.kvHeads, dim = a.headDim;
    float* scores = scratch;
    float* qf = scratch + (a.keys + kLanes - 1) / kLanes * kLanes;
    float* of = qf + dim;
    const T* k = static_cast<const T*>(a.k) + row * a.kBatch + g * a.kHead;
    const T* v = static_cast<const T*>(a.v) + row * a.vBatch + g * a.vHead;
    for (int64_t h = g * group; h < (g + 1) * group; ++h)
        for (int64_t s = 0; s < a.seq; ++s) {
            const T* q = static_cast<const T*>(a.q) + row * a.qBatch + h * a.qHead + s * a.qSeq;
            T* o = static_cast<T*>(a.out) + row * a.oBatch + h * a.oHead + s * a.oSeq;
            const bool* allowed =
                a.mask ? a.mask + row * a.mBatch + h * a.mHead + s * a.mSeq : nullptr;
            const int64_t visible = a.mask ? a.keys : a.keys - a.seq + s + 1;  // causal
            for (int64_t d = 0; d < dim; ++d)
                qf[d] = widen(q[d]);
            const float best = visible > 0 ? scoresOf(qf, k, a.kPos, allowed, a.mPos, visible, dim,
                                                      a.scale, scores)
                                           : -__builtin_inff();
            if (best == -__builtin_inff()) {  // no key to see
                for (int64_t d = 0; d < dim; ++d)
                    o[d] = narrowTo(0.0f, o);
                continue;
            }
            const float inverse = 1.0f / expAndSum(scores, visible, best);
            weightedSum(scores, v, a.vPos, visible, dim, of);
            for (int64_t d = 0; d < dim; ++d)
                o[d] = narrowTo(of[d] * inverse, o);
        }
}
