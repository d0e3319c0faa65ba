// Exact and near-duplicate detection: normalisation, exact hashing, MinHash with LSH banding.
#include "data/curate/dedup.h"

#include "data/curate/hash.h"
#include "tokenizer/pretokenizer.h"
#include "util/error.h"

#include <utf8proc.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <unordered_map>

namespace tb {

namespace {

bool isAsciiSpace(unsigned char c)
{
    return c == ' ' || (c >= 0x09 && c <= 0x0D);
}

bool isAscii(std::string_view text)
{
    unsigned char any = 0;
    for (const char c : text)
        any |= static_cast<unsigned char>(c);
    return any < 0x80;
}

// out = text with A-Z lowered and whitespace runs collapsed to one space, trimmed.
void normaliseAscii(std::string_view text, std::string& out)
{
    out.clear();
    out.reserve(text.size());
    bool pendingSpace = false;
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (isAsciiSpace(c)) {
            pendingSpace = !out.empty();
            continue;
        }
        if (pendingSpace) {
            out.push_back(' ');
            pendingSpace = false;
        }
        out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : ch);
    }
}

// normaliseText into a reused buffer.
void normaliseInto(std::string_view text, std::string& out)
{
    if (isAscii(text)) {
        normaliseAscii(text, out);
        return;
    }
    const std::string valid = toValidUtf8(text);
    utf8proc_uint8_t* mapped = nullptr;
    const utf8proc_ssize_t n =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(valid.data()),
                     static_cast<utf8proc_ssize_t>(valid.size()), &mapped,
                     utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_CASEFOLD));
    if (n < 0)
        fail("normalising a ", text.size(), "-byte text: ", utf8proc_errmsg(n));
    const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(mapped, &std::free);

    out.clear();
    out.reserve(static_cast<size_t>(n));
    bool pendingSpace = false;
    for (utf8proc_ssize_t i = 0; i < n;) {
        utf8proc_int32_t cp = 0;
        const utf8proc_ssize_t len = utf8proc_iterate(mapped + i, n - i, &cp);
        if (len <= 0)  // cannot happen on utf8proc's own output; skip a byte rather than loop
            cp = 0xFFFD;
        const utf8proc_ssize_t step = len > 0 ? len : 1;
        if (isWhiteSpace(static_cast<char32_t>(cp))) {
            pendingSpace = !out.empty();
        } else {
            if (pendingSpace) {
                out.push_back(' ');
                pendingSpace = false;
            }
            out.append(reinterpret_cast<const char*>(mapped + i), static_cast<size_t>(step));
        }
        i += step;
    }
}

constexpr uint64_t kExactSeed = 0x6a09e667f3bcc908ULL;
constexpr uint64_t kWordSeed = 0xbb67ae8584caa73bULL;
constexpr uint64_t kShingleSeed = 0x3c6ef372fe94f82bULL;
constexpr uint64_t kBandSeed = 0xa54ff53a5f1d36f1ULL;

// uint64 keys (band hashes) -> chains of kept-record ids; open addressing with linear probing.
// Built for millions of entries without a node allocation each.
class BandTable {
public:
    BandTable() { rehash(1024); }

    void insert(uint64_t key, int32_t id)
    {
        if (2 * (m_used + 1) > m_keys.size())
            rehash(2 * m_keys.size());
        size_t slot = find(key);
        if (m_heads[slot] < 0) {
            m_keys[slot] = key;
            ++m_used;
        }
        m_next.push_back(m_heads[slot]);
        m_ids.push_back(id);
        m_heads[slot] = static_cast<int32_t>(m_ids.size() - 1);
    }

    template <typename F> void forEach(uint64_t key, F&& f) const
    {
        const size_t slot = find(key);
        for (int32_t e = m_heads[slot]; e >= 0; e = m_next[static_cast<size_t>(e)])
            f(m_ids[static_cast<size_t>(e)]);
    }

private:
    // The slot holding key, or the empty slot where it would go.
    size_t find(uint64_t key) const
    {
        const size_t mask = m_keys.size() - 1;
        size_t slot = static_cast<size_t>(key) & mask;
        while (m_heads[slot] >= 0 && m_keys[slot] != key)
            slot = (slot + 1) & mask;
        return slot;
    }

    void rehash(size_t capacity)
    {
        std::vector<uint64_t> keys(capacity, 0);
        std::vector<int32_t> heads(capacity, -1);
        const size_t mask = capacity - 1;
        for (size_t s = 0; s < m_keys.size(); ++s) {
            if (m_heads[s] < 0)
                continue;
            size_t slot = static_cast<size_t>(m_keys[s]) & mask;
            while (heads[slot] >= 0)
                slot = (slot + 1) & mask;
            keys[slot] = m_keys[s];
            heads[slot] = m_heads[s];
        }
        m_keys.swap(keys);
        m_heads.swap(heads);
    }

    std::vector<uint64_t> m_keys;
    std::vector<int32_t> m_heads;  // -1: empty slot
    std::vector<int32_t> m_next;   // per entry: the previous entry with the same key, or -1
    std::vector<int32_t> m_ids;    // per entry: kept-record id
    size_t m_used = 0;
};

// Sorted, duplicate-free 32-bit hashes of the word shingles of normalised text (words are separated
// by single spaces). Fewer than k words: one shingle of all of them.
void shingleHashes(const std::string& text, int k, std::vector<uint64_t>& words,
                   std::vector<uint32_t>& out)
{
    words.clear();
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find(' ', start);
        if (end == std::string::npos)
            end = text.size();
        words.push_back(hashBytes(std::string_view(text).substr(start, end - start), kWordSeed));
        start = end + 1;
    }
    const size_t width = std::min(words.size(), static_cast<size_t>(k));
    const size_t count = words.size() >= static_cast<size_t>(k) ? words.size() - k + 1 : 1;
    out.resize(count);
    for (size_t s = 0; s < count; ++s) {
        uint64_t h = kShingleSeed ^ width;
        for (size_t w = 0; w < width; ++w)
            h = mix64(h + words[s + w]);
        out[s] = static_cast<uint32_t>(h >> 32);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
}

// |A ∩ B| / |A ∪ B| of two sorted, duplicate-free sets.
double jaccard(const uint32_t* a, size_t na, const uint32_t* b, size_t nb)
{
    size_t i = 0, j = 0, common = 0;
    while (i < na && j < nb) {
        if (a[i] < b[j]) {
            ++i;
        } else if (b[j] < a[i]) {
            ++j;
        } else {
            ++common;
            ++i;
            ++j;
        }
    }
    const size_t unionSize = na + nb - common;
    return unionSize ? static_cast<double>(common) / static_cast<double>(unionSize) : 1.0;
}

void checkOptions(const DedupOptions& options)
{
    if (options.nearThreshold) {
        const double t = *options.nearThreshold;
        if (!(t > 0.0 && t <= 1.0))
            fail("near-duplicate threshold must be in (0, 1], got ", t);
        if (options.shingleWords < 1 || options.shingleWords > 64)
            fail("shingle size must be 1-64 words, got ", options.shingleWords);
        if (options.permutations < 1 || options.permutations > 4096)
            fail("MinHash permutations must be 1-4096, got ", options.permutations);
    }
}

}  // namespace

std::string normaliseText(std::string_view text)
{
    std::string out;
    normaliseInto(text, out);
    return out;
}

LshBanding chooseBanding(double threshold, int permutations)
{
    // A pair with Jaccard s shares at least one band with probability 1 - (1 - s^r)^b.
    const auto candidate = [](double s, int b, int r) {
        return 1.0 - std::pow(1.0 - std::pow(s, r), b);
    };
    constexpr int kSteps = 200;
    constexpr double kRecallAtThreshold = 0.99;
    LshBanding best;
    double bestArea = 0, bestRecall = -1;
    bool bestMeets = false;
    for (int b = 1; b <= permutations; ++b) {
        const int r = permutations / b;
        const double recall = candidate(threshold, b, r);
        const bool meets = recall >= kRecallAtThreshold;
        // False-positive area: integral over [0, threshold) of the candidate probability
        // (midpoints).
        double area = 0;
        for (int i = 0; i < kSteps; ++i)
            area += candidate(threshold * (i + 0.5) / kSteps, b, r);
        area *= threshold / kSteps;
        const bool better =
            meets ? (!bestMeets || area < bestArea) : (!bestMeets && recall > bestRecall);
        if (better) {
            best = {b, r};
            bestArea = area;
            bestRecall = recall;
            bestMeets = meets;
        }
    }
    return best;
}

DedupResult findDuplicates(const std::vector<std::string>& texts, const DedupOptions& options,
                           const std::function<bool(double)>& progress)
{
    checkOptions(options);
    const size_t n = texts.size();
    DedupResult result;
    result.records = static_cast<int64_t>(n);

    // Per record: the kept record of its cluster (itself when kept) and the similarity to it.
    std::vector<int64_t> keptOf(n);
    std::vector<double> similarityTo(n, 1.0);

    // Exact: hash of the normalised text -> first record with that text. A different text under
    // the same hash (a 64-bit collision) is re-hashed under the next seed, so no text is lost.
    std::unordered_map<uint64_t, int64_t> firstByHash;
    if (options.exact)
        firstByHash.reserve(n);

    // Near: MinHash h_p(x) = ((a_p * x + b_p) mod 2^64) >> 32 over 32-bit shingle hashes x, a
    // multiply-add-shift family with a_p, b_p drawn from the seed.
    const bool near = options.nearThreshold.has_value();
    const double threshold = near ? *options.nearThreshold : 1.0;
    const size_t perms = near ? static_cast<size_t>(options.permutations) : 0;
    const LshBanding banding = near ? chooseBanding(threshold, options.permutations) : LshBanding{};
    // Candidates whose signature agreement falls this far below the threshold skip the exact
    // Jaccard: 4.5 standard deviations of the MinHash estimate at the threshold.
    const double prefilter =
        threshold -
        std::max(0.05, 4.5 * std::sqrt(std::max(threshold * (1 - threshold), 0.01) /
                                       std::max<double>(1.0, static_cast<double>(perms))));
    std::vector<uint64_t> mulA(perms), addB(perms);
    {
        SplitMix64 rng(options.seed);
        for (size_t p = 0; p < perms; ++p) {
            mulA[p] = rng.next() | 1;
            addB[p] = rng.next();
        }
    }
    // Kept records (near mode): record index, signature, shingle set in one arena.
    std::vector<int64_t> keptRecord;
    std::vector<uint32_t> keptSignatures;
    std::vector<uint32_t> shingleArena;
    std::vector<size_t> shingleStart{0};
    std::vector<int64_t> seenBy;  // per kept id: last record that looked at it as a candidate
    BandTable bands;

    std::string normalised, other;
    std::vector<uint64_t> words;
    std::vector<uint32_t> shingles, signature(perms);
    std::vector<uint64_t> bandKeys(static_cast<size_t>(banding.bands));

    for (size_t i = 0; i < n; ++i) {
        if (progress && i % 1024 == 0 && !progress(static_cast<double>(i) / n))
            fail("duplicate search cancelled at record ", i, " of ", n);
        keptOf[i] = static_cast<int64_t>(i);
        normaliseInto(texts[i], normalised);

        if (options.exact) {
            int64_t copyOf = -1;
            for (uint64_t seed = kExactSeed;; ++seed) {
                const uint64_t h = hashBytes(normalised, seed);
                const auto [it, inserted] = firstByHash.try_emplace(h, static_cast<int64_t>(i));
                if (inserted)
                    break;
                const int64_t j = it->second;
                bool same = texts[static_cast<size_t>(j)] == texts[i];
                if (!same) {
                    normaliseInto(texts[static_cast<size_t>(j)], other);
                    same = other == normalised;
                }
                if (same) {
                    copyOf = j;
                    break;
                }
            }
            if (copyOf >= 0) {
                const int64_t kept = keptOf[static_cast<size_t>(copyOf)];
                keptOf[i] = kept;
                similarityTo[i] = similarityTo[static_cast<size_t>(copyOf)];
                result.duplicates.push_back({static_cast<int64_t>(i), kept, similarityTo[i], true});
                ++result.exactDuplicates;
                continue;
            }
        }
        if (!near)
            continue;

        shingleHashes(normalised, options.shingleWords, words, shingles);
        std::fill(signature.begin(), signature.end(), UINT32_MAX);
        for (const uint32_t x : shingles) {
            for (size_t p = 0; p < perms; ++p) {
                const auto h = static_cast<uint32_t>((mulA[p] * x + addB[p]) >> 32);
                signature[p] = std::min(signature[p], h);
            }
        }
        const size_t rows = static_cast<size_t>(banding.rows);
        for (size_t b = 0; b < bandKeys.size(); ++b) {
            const std::string_view band(reinterpret_cast<const char*>(signature.data() + b * rows),
                                        rows * sizeof(uint32_t));
            bandKeys[b] = hashBytes(band, kBandSeed + b);
        }

        int32_t bestId = -1;
        double bestSimilarity = -1;
        for (const uint64_t key : bandKeys) {
            bands.forEach(key, [&](int32_t id) {
                auto& seen = seenBy[static_cast<size_t>(id)];
                if (seen == static_cast<int64_t>(i))
                    return;
                seen = static_cast<int64_t>(i);
                const uint32_t* sig = keptSignatures.data() + static_cast<size_t>(id) * perms;
                size_t agree = 0;
                for (size_t p = 0; p < perms; ++p)
                    agree += sig[p] == signature[p];
                if (static_cast<double>(agree) < prefilter * static_cast<double>(perms))
                    return;
                const size_t from = shingleStart[static_cast<size_t>(id)];
                const size_t to = shingleStart[static_cast<size_t>(id) + 1];
                const double s = jaccard(shingles.data(), shingles.size(),
                                         shingleArena.data() + from, to - from);
                if (s >= threshold &&
                    (s > bestSimilarity || (s == bestSimilarity && id < bestId))) {
                    bestSimilarity = s;
                    bestId = id;
                }
            });
        }
        if (bestId >= 0) {
            const int64_t kept = keptRecord[static_cast<size_t>(bestId)];
            keptOf[i] = kept;
            similarityTo[i] = bestSimilarity;
            result.duplicates.push_back({static_cast<int64_t>(i), kept, bestSimilarity, false});
            ++result.nearDuplicates;
            continue;
        }
        const auto id = static_cast<int32_t>(keptRecord.size());
        keptRecord.push_back(static_cast<int64_t>(i));
        keptSignatures.insert(keptSignatures.end(), signature.begin(), signature.end());
        shingleArena.insert(shingleArena.end(), shingles.begin(), shingles.end());
        shingleStart.push_back(shingleArena.size());
        seenBy.push_back(-1);
        for (const uint64_t key : bandKeys)
            bands.insert(key, id);
    }

    // Clusters: each kept record with duplicates, then those duplicates in index order.
    std::unordered_map<int64_t, size_t> clusterOf;
    for (const DuplicateOf& d : result.duplicates) {
        auto [it, inserted] = clusterOf.try_emplace(d.keptIndex, result.clusters.size());
        if (inserted)
            result.clusters.push_back({d.keptIndex});
        result.clusters[it->second].push_back(d.index);
    }
    std::sort(result.clusters.begin(), result.clusters.end(),
              [](const auto& a, const auto& b) { return a.front() < b.front(); });
    if (progress)
        progress(1.0);
    return result;
}

}  // namespace tb
