// Exact and near-duplicate detection: normalisation, exact hashing, MinHash with LSH banding.
#include "data/curate/dedup.h"

#include "data/curate/hash.h"
#include "tokenizer/pretokenizer.h"
#include "util/error.h"

#include <utf8proc.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <unordered_map>

#include <stdio.h>
#include <unistd.h>

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

// Hashes of normalised texts -> the first record index with that hash; open addressing with
// linear probing in one flat array of 8-byte slots, at most 70 % full. A slot keeps 32 bits of the
// 64-bit hash, which also choose its home slot (multiply-shift, so the capacity need not be a power
// of two), and the record index. Two texts whose hashes agree in those bits read as one hash, which
// the caller settles by comparing the texts, as it does a collision of the whole hash (about a
// hundred such pairs among a million records, each one more text read): exact, at two thirds of the
// memory of full keys.
class ExactTable {
public:
    // Sized for `expected` entries up front, so that a correct guess never rehashes (a rehash
    // holds the old and the new arrays at once: half again the table at its peak).
    explicit ExactTable(int64_t expected = 0)
    {
        rehash(capacityFor(static_cast<size_t>(std::max<int64_t>(expected, 0))));
    }

    // The index stored under key; or, when there is none, stores `index` there and returns -1.
    int32_t findOrInsert(uint64_t key, int32_t index)
    {
        if (10 * (m_used + 1) > 7 * m_slots.size())
            rehash(capacityFor(2 * m_used + 2));
        const auto tag = static_cast<uint32_t>(key >> 32);
        const size_t slot = find(m_slots, tag);
        if (m_slots[slot].value >= 0)
            return m_slots[slot].value;
        m_slots[slot] = {tag, index};
        ++m_used;
        return -1;
    }

private:
    struct Slot {
        uint32_t tag = 0;
        int32_t value = -1;  // -1: empty
    };

    static size_t capacityFor(size_t entries)
    {
        return std::max<size_t>(1024, entries * 10 / 7 + 1);
    }

    static size_t find(const std::vector<Slot>& slots, uint32_t tag)
    {
        size_t slot = static_cast<size_t>((static_cast<uint64_t>(tag) * slots.size()) >> 32);
        while (slots[slot].value >= 0 && slots[slot].tag != tag)
            slot = slot + 1 == slots.size() ? 0 : slot + 1;
        return slot;
    }

    void rehash(size_t capacity)
    {
        std::vector<Slot> slots(capacity);
        for (const Slot& s : m_slots)
            if (s.value >= 0)
                slots[find(slots, s.tag)] = s;
        m_slots.swap(slots);
    }

    std::vector<Slot> m_slots;
    size_t m_used = 0;
};

// uint64 values written once in order to an unnamed temporary file (removed from its folder as
// soon as it is made, so nothing is left behind) and read back in blocks.
class SpillFile {
public:
    SpillFile()
    {
        std::error_code ec;
        const std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
        std::string path =
            ((ec ? std::filesystem::path("/tmp") : dir) / "tunebench-dedup-XXXXXX").string();
        const int fd = ::mkstemp(path.data());
        if (fd < 0)
            fail("duplicate search: cannot create a temporary file ", path, ": ",
                 std::strerror(errno));
        ::unlink(path.c_str());
        m_file = ::fdopen(fd, "w+b");
        if (!m_file) {
            ::close(fd);
            fail("duplicate search: cannot open a temporary file: ", std::strerror(errno));
        }
        m_block.reserve(kBlock);
    }
    ~SpillFile() { std::fclose(m_file); }
    SpillFile(const SpillFile&) = delete;
    SpillFile& operator=(const SpillFile&) = delete;

    void push(uint64_t value)
    {
        m_block.push_back(value);
        if (m_block.size() == kBlock)
            flush();
    }

    // f(position, value) for every value pushed, in order.
    template <typename F> void forEach(F&& f)
    {
        flush();
        std::rewind(m_file);
        uint64_t position = 0;
        m_block.resize(kBlock);
        for (;;) {
            const size_t got = std::fread(m_block.data(), sizeof(uint64_t), kBlock, m_file);
            for (size_t k = 0; k < got; ++k)
                f(position++, m_block[k]);
            if (got < kBlock)
                break;
        }
        if (std::ferror(m_file))
            fail("duplicate search: reading a temporary file: ", std::strerror(errno));
        m_block.clear();
    }

private:
    static constexpr size_t kBlock = 8192;

    void flush()
    {
        if (!m_block.empty() &&
            std::fwrite(m_block.data(), sizeof(uint64_t), m_block.size(), m_file) != m_block.size())
            fail("duplicate search: writing a temporary file (disk full?): ", std::strerror(errno));
        m_block.clear();
    }

    std::FILE* m_file = nullptr;
    std::vector<uint64_t> m_block;
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

// What the near search needs from the options: the MinHash family h_p(x) = ((a_p * x + b_p) mod
// 2^64) >> 32 over 32-bit shingle hashes x (a multiply-add-shift family drawn from the seed), the
// banding, and the prefilter.
struct NearPlan {
    bool on = false;
    double threshold = 1.0;
    size_t perms = 0;
    int shingleWords = 3;
    LshBanding banding;
    // Candidates whose signature agreement falls this far below the threshold skip the exact
    // Jaccard: 4.5 standard deviations of the MinHash estimate at the threshold.
    double prefilter = 0;
    std::vector<uint64_t> mulA, addB;
};

NearPlan nearPlan(const DedupOptions& options)
{
    NearPlan plan;
    plan.on = options.nearThreshold.has_value();
    if (!plan.on)
        return plan;
    plan.threshold = *options.nearThreshold;
    plan.perms = static_cast<size_t>(options.permutations);
    plan.shingleWords = options.shingleWords;
    plan.banding = chooseBanding(plan.threshold, options.permutations);
    const double t = plan.threshold;
    plan.prefilter = t - std::max(0.05, 4.5 * std::sqrt(std::max(t * (1 - t), 0.01) /
                                                        static_cast<double>(plan.perms)));
    SplitMix64 rng(options.seed);
    for (size_t p = 0; p < plan.perms; ++p) {
        plan.mulA.push_back(rng.next() | 1);
        plan.addB.push_back(rng.next());
    }
    return plan;
}

// A record's shingle set and MinHash signature.
struct Sketch {
    std::vector<uint32_t> shingles, signature;
};

void sketchOf(const NearPlan& plan, const std::string& normalised, std::vector<uint64_t>& words,
              Sketch& out)
{
    shingleHashes(normalised, plan.shingleWords, words, out.shingles);
    out.signature.assign(plan.perms, UINT32_MAX);
    for (const uint32_t x : out.shingles) {
        for (size_t p = 0; p < plan.perms; ++p) {
            const auto h = static_cast<uint32_t>((plan.mulA[p] * x + plan.addB[p]) >> 32);
            out.signature[p] = std::min(out.signature[p], h);
        }
    }
}

// The band-file entry of a record without band keys (an exact copy); no band key takes its value.
constexpr uint64_t kNoBand = ~uint64_t(0);

uint64_t bandKey(const NearPlan& plan, const std::vector<uint32_t>& signature, size_t band)
{
    const size_t rows = static_cast<size_t>(plan.banding.rows);
    const std::string_view bytes(reinterpret_cast<const char*>(signature.data() + band * rows),
                                 rows * sizeof(uint32_t));
    const uint64_t key = hashBytes(bytes, kBandSeed + band);
    return key == kNoBand ? key - 1 : key;
}

// Signature agreement, then exact Jaccard when the agreement passes the prefilter; -1 below it.
double similarity(const NearPlan& plan, const Sketch& a, const Sketch& b)
{
    size_t agree = 0;
    for (size_t p = 0; p < plan.perms; ++p)
        agree += a.signature[p] == b.signature[p];
    if (static_cast<double>(agree) < plan.prefilter * static_cast<double>(plan.perms))
        return -1;
    return jaccard(a.shingles.data(), a.shingles.size(), b.shingles.data(), b.shingles.size());
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

DedupResult findDuplicates(int64_t count, const std::function<void(const TextSink&)>& each,
                           const std::function<std::string(int64_t)>& textAt,
                           const DedupOptions& options, const std::function<bool(double)>& progress)
{
    checkOptions(options);
    const NearPlan plan = nearPlan(options);
    const double denominator = static_cast<double>(std::max<int64_t>(count, 1));
    const double firstShare = plan.on ? 0.8 : 1.0;  // of the progress: the streaming pass
    const auto step = [&](double fraction, int64_t at) {
        if (progress && !progress(fraction))
            fail("duplicate search cancelled at record ", at, " of ", count);
    };

    // Pass 1, streaming the texts once: exact copies by the hash of the normalised text (a
    // different text under the same hash, a 64-bit collision, is re-hashed under the next seed, so
    // no text is lost); every other record's LSH band keys go to one temporary file per band.
    // A band file holds one key per record, in record order, so a key's position is its record's
    // index; an exact copy, which takes no part in the near search, gets kNoBand in every band.
    ExactTable firstByHash(options.exact ? count : 0);
    std::vector<std::pair<int32_t, int32_t>> exactCopies;  // (record, first record with its text)
    size_t nearCount = 0;                                  // records with band keys
    std::vector<std::unique_ptr<SpillFile>> bandFiles;
    for (int b = 0; plan.on && b < plan.banding.bands; ++b)
        bandFiles.push_back(std::make_unique<SpillFile>());
    std::string normalised, other;
    std::vector<uint64_t> words;
    Sketch sketch;
    int64_t n = 0;
    each([&](std::string_view text) {
        if (n % 1024 == 0)
            step(firstShare * static_cast<double>(n) / denominator, n);
        if (n >= INT32_MAX)
            fail("duplicate search: more than ", INT32_MAX, " records");
        const auto i = static_cast<int32_t>(n++);
        normaliseInto(text, normalised);
        for (uint64_t seed = kExactSeed; options.exact; ++seed) {
            const int32_t j = firstByHash.findOrInsert(hashBytes(normalised, seed), i);
            if (j < 0)
                break;
            const std::string earlier = textAt(j);
            bool same = earlier == text;
            if (!same) {
                normaliseInto(earlier, other);
                same = other == normalised;
            }
            if (same) {
                exactCopies.emplace_back(i, j);
                for (const auto& file : bandFiles)
                    file->push(kNoBand);
                return;
            }
        }
        if (!plan.on)
            return;
        sketchOf(plan, normalised, words, sketch);
        for (size_t b = 0; b < bandFiles.size(); ++b)
            bandFiles[b]->push(bandKey(plan, sketch.signature, b));
        ++nearCount;
    });
    firstByHash = ExactTable();  // not needed past the streaming pass

    // Pass 2, one band at a time: records (positions) whose keys agree in a band form a run. Only
    // runs of two or more can make candidates, so only their members are kept, as (position, run).
    std::vector<std::pair<uint32_t, uint32_t>> member;
    std::vector<uint32_t> runStart{0};
    {
        // (key, position) of one band in 12 bytes, not a std::pair's padded 16.
        struct KeyAt {
            uint32_t high, low, position;
            bool operator<(const KeyAt& o) const
            {
                return high != o.high ? high < o.high
                       : low != o.low ? low < o.low
                                      : position < o.position;
            }
            bool sameKey(const KeyAt& o) const { return high == o.high && low == o.low; }
        };
        // A band's keys are sorted a part at a time, the parts split by the keys' top bits (so a
        // run never spans two parts and the parts come in key order): about bandSortBytes of
        // them in memory whatever the store's size, for one more read of the band file a part.
        int partBits = 0;
        while (partBits < 8 && (nearCount * sizeof(KeyAt) >> partBits) > options.bandSortBytes)
            ++partBits;
        const uint64_t parts = uint64_t(1) << partBits;
        std::vector<KeyAt> byKey;
        byKey.reserve((nearCount >> partBits) + (nearCount >> partBits) / 8 + 64);
        for (size_t b = 0; b < bandFiles.size(); ++b) {
            step(0.8 + 0.1 * static_cast<double>(b) / static_cast<double>(bandFiles.size()), n);
            for (uint64_t part = 0; part < parts; ++part) {
                byKey.clear();
                bandFiles[b]->forEach([&](uint64_t position, uint64_t key) {
                    if (key != kNoBand && (partBits == 0 || key >> (64 - partBits) == part))
                        byKey.push_back({static_cast<uint32_t>(key >> 32),
                                         static_cast<uint32_t>(key),
                                         static_cast<uint32_t>(position)});
                });
                std::sort(byKey.begin(), byKey.end());
                for (size_t a = 0; a < byKey.size();) {
                    size_t e = a + 1;
                    while (e < byKey.size() && byKey[e].sameKey(byKey[a]))
                        ++e;
                    if (e - a >= 2) {
                        const auto run = static_cast<uint32_t>(runStart.size() - 1);
                        for (size_t k = a; k < e; ++k)
                            member.emplace_back(byKey[k].position, run);
                        runStart.push_back(runStart.back() + static_cast<uint32_t>(e - a));
                    }
                    a = e;
                }
            }
            bandFiles[b].reset();
        }
    }

    // Pass 3, in record order over the positions that are in some run: the candidates are the
    // kept earlier members of its runs (each run's kept members fill the front of its slice). A
    // candidate is confirmed by exact Jaccard on sketches recomputed from textAt; the most similar
    // within the threshold wins, the earliest on a tie. A kept position joins its runs.
    std::sort(member.begin(), member.end());
    std::vector<uint32_t> keptSlots(runStart.back());
    std::vector<uint32_t> keptCount(runStart.size() - 1, 0);
    std::unordered_map<uint32_t, Sketch> sketches;  // of kept positions, bounded
    constexpr size_t kSketchesHeld = 4096;
    const auto sketchAt = [&](uint32_t position, Sketch& out) {
        normaliseInto(textAt(position), other);
        sketchOf(plan, other, words, out);
    };
    std::vector<uint32_t> candidates;
    std::vector<DuplicateOf> nearCopies;
    for (size_t a = 0, group = 0; a < member.size(); ++group) {
        const uint32_t position = member[a].first;
        size_t e = a;
        while (e < member.size() && member[e].first == position)
            ++e;
        if (group % 1024 == 0)
            step(0.9 + 0.1 * static_cast<double>(a) / static_cast<double>(member.size()), n);
        candidates.clear();
        for (size_t k = a; k < e; ++k) {
            const uint32_t run = member[k].second;
            candidates.insert(candidates.end(), keptSlots.begin() + runStart[run],
                              keptSlots.begin() + runStart[run] + keptCount[run]);
        }
        std::sort(candidates.begin(), candidates.end());
        candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
        int64_t best = -1;
        double bestSimilarity = -1;
        if (!candidates.empty()) {
            sketchAt(position, sketch);
            for (const uint32_t c : candidates) {
                auto it = sketches.find(c);
                if (it == sketches.end()) {
                    if (sketches.size() >= kSketchesHeld)
                        sketches.clear();
                    it = sketches.try_emplace(c).first;
                    sketchAt(c, it->second);
                }
                const double s = similarity(plan, sketch, it->second);
                if (s >= plan.threshold && s > bestSimilarity) {
                    bestSimilarity = s;
                    best = c;
                }
            }
        }
        if (best >= 0) {
            nearCopies.push_back({position, best, bestSimilarity, false});
        } else {
            for (size_t k = a; k < e; ++k) {
                const uint32_t run = member[k].second;
                keptSlots[runStart[run] + keptCount[run]++] = position;
            }
            if (!candidates.empty()) {
                if (sketches.size() >= kSketchesHeld)
                    sketches.clear();
                sketches[position] = std::move(sketch);
            }
        }
        a = e;
    }

    // Every duplicate by index: an exact copy joins the cluster of the first record with its text
    // (itself kept, or a near copy of a kept record, whose similarity it carries).
    DedupResult result;
    result.records = n;
    result.exactDuplicates = static_cast<int64_t>(exactCopies.size());
    result.nearDuplicates = static_cast<int64_t>(nearCopies.size());
    result.duplicates.reserve(exactCopies.size() + nearCopies.size());
    const auto byIndex = [](const DuplicateOf& d, int64_t index) { return d.index < index; };
    auto nearIt = nearCopies.begin();
    for (const auto& [copy, first] : exactCopies) {
        for (; nearIt != nearCopies.end() && nearIt->index < copy; ++nearIt)
            result.duplicates.push_back(*nearIt);
        const auto of = std::lower_bound(nearCopies.begin(), nearCopies.end(), first, byIndex);
        const bool firstIsNear = of != nearCopies.end() && of->index == first;
        result.duplicates.push_back(
            {copy, firstIsNear ? of->keptIndex : first, firstIsNear ? of->similarity : 1.0, true});
    }
    result.duplicates.insert(result.duplicates.end(), nearIt, nearCopies.end());

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

DedupResult findDuplicates(const std::vector<std::string>& texts, const DedupOptions& options,
                           const std::function<bool(double)>& progress)
{
    return findDuplicates(
        static_cast<int64_t>(texts.size()),
        [&](const TextSink& sink) {
            for (const std::string& text : texts)
                sink(text);
        },
        [&](int64_t i) { return texts[static_cast<size_t>(i)]; }, options, progress);
}

}  // namespace tb
