// Data curation algorithms against independent references: normalisation, exact and MinHash near
// dedup (recall/precision vs exact Jaccard), leak/PII scan and masking, Luhn, IBAN, length stats,
// stratified splits, rehearsal sampling, Cohen's kappa.
#include "data/curate/agreement.h"
#include "data/curate/dedup.h"
#include "data/curate/scan.h"
#include "data/curate/split.h"
#include "data/curate/stats.h"
#include "util/error.h"

#include "test_util.h"

#include <QtTest>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <sstream>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace {

std::string describe(const std::vector<tb::ScanMatch>& matches)
{
    std::ostringstream out;
    for (const auto& m : matches)
        out << "[" << m.kind << " @" << m.offset << "+" << m.length << " " << m.masked << "] ";
    return out.str();
}

// Words of a space-separated text.
std::vector<std::string> splitWords(const std::string& text)
{
    std::vector<std::string> words;
    std::istringstream in(text);
    for (std::string w; in >> w;)
        words.push_back(w);
    return words;
}

// The reference: word k-shingles as strings, fewer than k words giving one shingle of all.
std::set<std::string> shingleSet(const std::string& text, size_t k)
{
    const auto words = splitWords(text);
    std::set<std::string> out;
    const size_t width = std::min(words.size(), k);
    const size_t count = words.size() >= k ? words.size() - k + 1 : 1;
    for (size_t s = 0; s < count; ++s) {
        std::string shingle;
        for (size_t w = 0; w < width; ++w) {
            if (w)
                shingle += ' ';
            shingle += words[s + w];
        }
        out.insert(shingle);
    }
    return out;
}

double exactJaccard(const std::set<std::string>& a, const std::set<std::string>& b)
{
    size_t common = 0;
    for (const auto& s : a)
        common += b.count(s);
    return static_cast<double>(common) / static_cast<double>(a.size() + b.size() - common);
}

// A corpus of random-word documents (80-200 words from a 3,000-word vocabulary) in which `planted`
// documents are copies of an earlier original with 1-5% of their words substituted.
std::vector<std::string> plantedCorpus(int originals, int planted, uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::vector<std::string> vocabulary;
    for (int i = 0; i < 3000; ++i) {
        std::string w;
        const int len = 3 + static_cast<int>(rng() % 7);
        for (int c = 0; c < len; ++c)
            w.push_back(static_cast<char>('a' + rng() % 26));
        vocabulary.push_back(w);
    }
    std::vector<std::vector<std::string>> docs;
    std::vector<int> originalIds;
    int madeOriginals = 0, madePlanted = 0;
    while (madeOriginals < originals || madePlanted < planted) {
        const bool plant = madePlanted < planted && !originalIds.empty() &&
                           (madeOriginals == originals ||
                            rng() % (originals + planted) < static_cast<uint64_t>(planted));
        if (plant) {
            auto doc = docs[static_cast<size_t>(originalIds[rng() % originalIds.size()])];
            const double rate = 0.01 + 0.04 * static_cast<double>(rng() % 1001) / 1000.0;
            const auto edits =
                std::max<size_t>(1, static_cast<size_t>(std::lround(rate * doc.size())));
            for (size_t e = 0; e < edits; ++e)
                doc[rng() % doc.size()] = vocabulary[rng() % vocabulary.size()];
            docs.push_back(doc);
            ++madePlanted;
        } else {
            std::vector<std::string> doc(80 + rng() % 121);
            for (auto& w : doc)
                w = vocabulary[rng() % vocabulary.size()];
            originalIds.push_back(static_cast<int>(docs.size()));
            docs.push_back(doc);
            ++madeOriginals;
        }
    }
    std::vector<std::string> texts;
    for (const auto& doc : docs) {
        std::string t;
        for (const auto& w : doc)
            t += (t.empty() ? "" : " ") + w;
        texts.push_back(t);
    }
    return texts;
}

// Ground truth by exact Jaccard: record i is removed when some earlier kept record has Jaccard
// >= threshold. Pairs sharing no shingle have Jaccard 0, so only pairs found through an inverted
// index need comparing.
std::set<int64_t> referenceNearDuplicates(const std::vector<std::string>& texts, double threshold,
                                          size_t k)
{
    std::vector<std::set<std::string>> sets;
    for (const auto& t : texts)
        sets.push_back(shingleSet(t, k));
    std::map<std::string, std::vector<int64_t>> keptWith;  // shingle -> kept records holding it
    std::set<int64_t> removed;
    for (int64_t i = 0; i < static_cast<int64_t>(texts.size()); ++i) {
        std::set<int64_t> candidates;
        for (const auto& s : sets[static_cast<size_t>(i)]) {
            const auto it = keptWith.find(s);
            if (it != keptWith.end())
                candidates.insert(it->second.begin(), it->second.end());
        }
        bool duplicate = false;
        for (const int64_t j : candidates)
            duplicate |= exactJaccard(sets[static_cast<size_t>(i)], sets[static_cast<size_t>(j)]) >=
                         threshold;
        if (duplicate) {
            removed.insert(i);
        } else {
            for (const auto& s : sets[static_cast<size_t>(i)])
                keptWith[s].push_back(i);
        }
    }
    return removed;
}

std::vector<tb::Label> tableLabels(const std::vector<std::vector<int>>& table,
                                   const std::vector<std::string>& categories, int64_t firstId)
{
    // table[a][b]: records that annotator "ann" labelled categories[a] and "bea" categories[b].
    std::vector<tb::Label> labels;
    int64_t id = firstId;
    for (size_t a = 0; a < table.size(); ++a)
        for (size_t b = 0; b < table[a].size(); ++b)
            for (int n = 0; n < table[a][b]; ++n, ++id) {
                labels.push_back({id, "bea", categories[b]});
                labels.push_back({id, "ann", categories[a]});
            }
    return labels;
}

}  // namespace

class TestDataCurate : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void normalisesText();
    void exactDuplicatesAndClusters();
    void exactDuplicatesAmongManyTexts();
    void nearDuplicatesMatchExactJaccard();
    void nearAndExactTogether();
    void dedupOptionsAndCancel();
    void bandingMeetsRecallAtThreshold();
    void luhn();
    void iban();
    void scanFindsEachKind();
    void scanLeavesOrdinaryTextAlone();
    void masking();
    void lengthStatsNearestRank();
    void histogramEdges();
    void splitStratifiedAndSeeded();
    void rehearsal();
    void kappaTextbook();
    void kappaEdgeCasesAndDisagreements();
    void timingReport();
};

void TestDataCurate::normalisesText()
{
    QCOMPARE(tb::normaliseText("  Hello\t\n  WORLD  "), std::string("hello world"));
    // "é" composed (U+00E9) and decomposed (e + U+0301), upper and lower case: one text.
    const std::string composed = "Caf\xC3\xA9";
    const std::string decomposed = "CAFE\xCC\x81";
    QCOMPARE(tb::normaliseText(composed), tb::normaliseText(decomposed));
    QCOMPARE(tb::normaliseText(decomposed), std::string("caf\xC3\xA9"));
    QCOMPARE(tb::normaliseText("Stra\u00DFe"), std::string("strasse"));  // full case folding
    // NBSP, ideographic space and a line separator are whitespace too.
    QCOMPARE(tb::normaliseText("a\u00A0\u3000b\u2028"), std::string("a b"));
    QCOMPARE(tb::normaliseText(""), std::string());
    QCOMPARE(tb::normaliseText(" \t\n"), std::string());
    // Invalid UTF-8 is replaced, not thrown on.
    QCOMPARE(tb::normaliseText(std::string("A\xFF") + "B"), std::string("a\uFFFDb"));
}

void TestDataCurate::exactDuplicatesAndClusters()
{
    const std::vector<std::string> texts = {
        "Hello World",           // 0 kept
        "hello   world",         // 1 = 0
        "Caf\xC3\xA9 au lait",   // 2 kept
        "CAFE\xCC\x81 AU LAIT",  // 3 = 2 (decomposed, upper case)
        "something else",        // 4 kept
        "HELLO WORLD\n",         // 5 = 0
        "hello worlds",          // 6 kept: one letter differs
    };
    tb::DedupOptions options;  // exact only
    const auto r = tb::findDuplicates(texts, options);
    QCOMPARE(r.records, int64_t(7));
    QCOMPARE(r.exactDuplicates, int64_t(3));
    QCOMPARE(r.nearDuplicates, int64_t(0));
    QCOMPARE(r.duplicates.size(), size_t(3));
    const std::vector<std::pair<int64_t, int64_t>> expected = {{1, 0}, {3, 2}, {5, 0}};
    for (size_t i = 0; i < expected.size(); ++i) {
        QCOMPARE(r.duplicates[i].index, expected[i].first);
        QCOMPARE(r.duplicates[i].keptIndex, expected[i].second);
        QCOMPARE(r.duplicates[i].similarity, 1.0);
        QVERIFY(r.duplicates[i].exact);
    }
    const std::vector<std::vector<int64_t>> clusters = {{0, 1, 5}, {2, 3}};
    QCOMPARE(r.clusters, clusters);

    QCOMPARE(tb::findDuplicates({}, options).records, int64_t(0));
    // Empty and whitespace-only texts are copies of each other.
    const auto blanks = tb::findDuplicates({"", " ", "\n\t"}, options);
    QCOMPARE(blanks.exactDuplicates, int64_t(2));
}

// 300,000 distinct texts, then a copy (in upper case) of every 1,000th: the exact table keeps 32
// bits of each 64-bit hash, so among 300,000 texts about ten pairs of different texts share them
// (n^2 / 2^33); each must be told apart by comparing the texts, never reported as a copy.
void TestDataCurate::exactDuplicatesAmongManyTexts()
{
    constexpr int kDistinct = 300000;
    std::vector<std::string> texts;
    texts.reserve(kDistinct + kDistinct / 1000);
    for (int i = 0; i < kDistinct; ++i)
        texts.push_back("record number " + std::to_string(i) + " of the set");
    for (int i = 0; i < kDistinct; i += 1000)
        texts.push_back("RECORD NUMBER " + std::to_string(i) + " OF THE SET");
    tb::DedupOptions options;  // exact only
    const auto r = tb::findDuplicates(texts, options);
    QCOMPARE(r.records, int64_t(texts.size()));
    QCOMPARE(r.exactDuplicates, int64_t(kDistinct / 1000));
    QCOMPARE(r.duplicates.size(), size_t(kDistinct / 1000));
    for (size_t k = 0; k < r.duplicates.size(); ++k) {
        QCOMPARE(r.duplicates[k].index, int64_t(kDistinct + k));
        QCOMPARE(r.duplicates[k].keptIndex, int64_t(1000 * k));
    }
}

void TestDataCurate::nearDuplicatesMatchExactJaccard()
{
    const auto texts = plantedCorpus(2000, 300, 11);
    for (const double threshold : {0.8, 0.9}) {
        tb::DedupOptions options;
        options.nearThreshold = threshold;
        const auto truth = referenceNearDuplicates(texts, threshold, 3);
        const auto r = tb::findDuplicates(texts, options);
        std::set<int64_t> found;
        std::set<int64_t> kept;
        for (int64_t i = 0; i < r.records; ++i)
            kept.insert(i);
        for (const auto& d : r.duplicates) {
            found.insert(d.index);
            kept.erase(d.index);
        }
        size_t hits = 0;
        for (const int64_t i : found)
            hits += truth.count(i);
        const double recall = truth.empty() ? 1.0 : double(hits) / double(truth.size());
        const double precision = found.empty() ? 1.0 : double(hits) / double(found.size());
        qInfo("threshold %.2f: %zu reference duplicates of %zu records; found %zu, recall %.4f, "
              "precision %.4f",
              threshold, truth.size(), texts.size(), found.size(), recall, precision);
        // The planted edit rates straddle the threshold, so the reference is non-trivial.
        QVERIFY(truth.size() > 50 && truth.size() < 300);
        QVERIFY2(recall >= 0.95, qPrintable(QString::number(recall)));
        QVERIFY2(precision >= 0.95, qPrintable(QString::number(precision)));
        QCOMPARE(r.nearDuplicates, int64_t(found.size()));
        // Each reported pair: kept partner earlier and kept, similarity the exact Jaccard.
        for (const auto& d : r.duplicates) {
            QVERIFY(d.keptIndex < d.index);
            QVERIFY(kept.count(d.keptIndex));
            QVERIFY(!d.exact);
            const double j = exactJaccard(shingleSet(texts[size_t(d.index)], 3),
                                          shingleSet(texts[size_t(d.keptIndex)], 3));
            QVERIFY(d.similarity >= threshold);
            QVERIFY2(std::abs(d.similarity - j) < 1e-9, qPrintable(QString::number(d.similarity)));
        }
        // Clusters: kept record first, then every duplicate that points at it.
        size_t members = 0;
        for (const auto& c : r.clusters) {
            QVERIFY(c.size() >= 2);
            QVERIFY(kept.count(c.front()));
            QVERIFY(std::is_sorted(c.begin() + 1, c.end()));
            members += c.size() - 1;
        }
        QCOMPARE(members, r.duplicates.size());
        // Deterministic for a seed.
        const auto again = tb::findDuplicates(texts, options);
        QCOMPARE(again.clusters, r.clusters);
        // Band keys sorted in 32 parts (1 KB of the 24 KB each band needs at a time) find the
        // same, pair for pair.
        tb::DedupOptions inParts = options;
        inParts.bandSortBytes = 1024;
        const auto parted = tb::findDuplicates(texts, inParts);
        QCOMPARE(parted.clusters, r.clusters);
        QCOMPARE(parted.duplicates.size(), r.duplicates.size());
        for (size_t k = 0; k < r.duplicates.size(); ++k) {
            QCOMPARE(parted.duplicates[k].index, r.duplicates[k].index);
            QCOMPARE(parted.duplicates[k].keptIndex, r.duplicates[k].keptIndex);
            QCOMPARE(parted.duplicates[k].similarity, r.duplicates[k].similarity);
        }
    }
}

void TestDataCurate::nearAndExactTogether()
{
    std::vector<std::string> words;
    for (int i = 0; i < 60; ++i)
        words.push_back(tbtest::numbered("w", i));
    std::string base, edited;
    for (int i = 0; i < 60; ++i) {
        if (i) {
            base += ' ';
            edited += ' ';
        }
        base += words[size_t(i)];
        edited += i == 30 ? std::string("changed") : words[size_t(i)];
    }
    // 0 kept; 1 near 0; 2 exact copy of 1 (so in 0's cluster); 3 unrelated; 4 exact copy of 0.
    const std::vector<std::string> texts = {base, edited, "  " + edited + " ", "short text", base};
    tb::DedupOptions options;
    options.nearThreshold = 0.8;
    const auto r = tb::findDuplicates(texts, options);
    QCOMPARE(r.duplicates.size(), size_t(3));
    // Reference: 60 words, 58 shingles; the edit at word 30 replaces 3 of them: 55 / 61.
    const double j = 55.0 / 61.0;
    QCOMPARE(r.duplicates[0].index, int64_t(1));
    QCOMPARE(r.duplicates[0].keptIndex, int64_t(0));
    QVERIFY(!r.duplicates[0].exact);
    QVERIFY(std::abs(r.duplicates[0].similarity - j) < 1e-12);
    QCOMPARE(r.duplicates[1].index, int64_t(2));
    QCOMPARE(r.duplicates[1].keptIndex, int64_t(0));
    QVERIFY(r.duplicates[1].exact);
    QVERIFY(std::abs(r.duplicates[1].similarity - j) < 1e-12);
    QCOMPARE(r.duplicates[2].index, int64_t(4));
    QCOMPARE(r.duplicates[2].similarity, 1.0);
    QCOMPARE(r.exactDuplicates, int64_t(2));
    QCOMPARE(r.nearDuplicates, int64_t(1));
    QCOMPARE(r.clusters, (std::vector<std::vector<int64_t>>{{0, 1, 2, 4}}));

    // Near only: identical texts are near duplicates with similarity 1.
    options.exact = false;
    const auto nearOnly = tb::findDuplicates(texts, options);
    QCOMPARE(nearOnly.nearDuplicates, int64_t(3));
    QCOMPARE(nearOnly.duplicates[2].similarity, 1.0);
    // Texts shorter than a shingle are one shingle: equal short texts match, others do not.
    const auto shortTexts = tb::findDuplicates({"a b", "A  b", "a c"}, options);
    QCOMPARE(shortTexts.duplicates.size(), size_t(1));
    QCOMPARE(shortTexts.duplicates[0].index, int64_t(1));
}

void TestDataCurate::dedupOptionsAndCancel()
{
    tb::DedupOptions bad;
    bad.nearThreshold = 1.5;
    QVERIFY_THROWS_EXCEPTION(tb::Error, tb::findDuplicates({"a"}, bad));
    bad.nearThreshold = 0.8;
    bad.shingleWords = 0;
    QVERIFY_THROWS_EXCEPTION(tb::Error, tb::findDuplicates({"a"}, bad));

    std::vector<std::string> texts(5000, "same text");
    tb::DedupOptions options;
    int calls = 0;
    double last = -1;
    bool monotonic = true;
    tb::findDuplicates(texts, options, [&](double f) {
        monotonic &= f >= last && f <= 1.0;
        last = f;
        ++calls;
        return true;
    });
    QVERIFY(calls >= 2);
    QVERIFY(monotonic);
    QCOMPARE(last, 1.0);
    QVERIFY_THROWS_EXCEPTION(tb::Error,
                             tb::findDuplicates(texts, options, [](double f) { return f < 0.5; }));
}

void TestDataCurate::bandingMeetsRecallAtThreshold()
{
    for (const double t : {0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0}) {
        const auto b = tb::chooseBanding(t, 128);
        qInfo("threshold %.2f: %d bands x %d rows", t, b.bands, b.rows);
        QVERIFY(b.bands * b.rows <= 128);
        const double recall = 1.0 - std::pow(1.0 - std::pow(t, b.rows), b.bands);
        QVERIFY2(recall >= 0.99, qPrintable(QString::number(t)));
        // and a pair at 0.3 similarity rarely collides for high thresholds
        if (t >= 0.8)
            QVERIFY(1.0 - std::pow(1.0 - std::pow(0.3, b.rows), b.bands) < 0.05);
    }
}

void TestDataCurate::luhn()
{
    QVERIFY(tb::luhnValid("4111 1111 1111 1111"));
    QVERIFY(tb::luhnValid("4111-1111-1111-1111"));
    QVERIFY(tb::luhnValid("79927398713"));  // the classic worked example
    QVERIFY(tb::luhnValid("378282246310005"));
    QVERIFY(!tb::luhnValid("4111 1111 1111 1112"));
    QVERIFY(!tb::luhnValid("4111 1111 1111 1121"));  // one digit changed
    QVERIFY(!tb::luhnValid("79927398710"));
    QVERIFY(!tb::luhnValid("4111x1111111111111"));
    QVERIFY(!tb::luhnValid(""));
    QVERIFY(!tb::luhnValid(" - "));
}

void TestDataCurate::iban()
{
    QVERIFY(tb::ibanValid("GB82 WEST 1234 5698 7654 32"));
    QVERIFY(tb::ibanValid("GB82WEST12345698765432"));
    QVERIFY(tb::ibanValid("gb82 west 1234 5698 7654 32"));
    QVERIFY(tb::ibanValid("DE89 3704 0044 0532 0130 00"));
    QVERIFY(tb::ibanValid("FR1420041010050500013M02606"));
    QVERIFY(!tb::ibanValid("GB83 WEST 1234 5698 7654 32"));  // check digits
    QVERIFY(!tb::ibanValid("DE88 3704 0044 0532 0130 00"));
    QVERIFY(!tb::ibanValid("GB82 WEST 1234 5698 7654 3"));   // length for GB
    QVERIFY(!tb::ibanValid("GB82-WEST-1234-5698-7654-32"));  // dashes are not IBAN separators
    QVERIFY(!tb::ibanValid("1234"));
}

void TestDataCurate::scanFindsEachKind()
{
    struct Case {
        std::string kind, secret, before, after;
    };
    const std::string key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq9xZ2kQ1m\n"
                            "T8aXlKQ3w0Zr5dY=\n-----END RSA PRIVATE KEY-----";
    const std::vector<Case> cases = {
        {"private_key", key, "config:\n", "\nend"},
        {"private_key", "-----BEGIN OPENSSH PRIVATE KEY-----", "a ", " (truncated)"},
        {"private_key",
         "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0abc\n=Xy12\n-----END PGP PRIVATE KEY "
         "BLOCK-----",
         "", "\n"},
        {"api_key", "AKIAIOSFODNN7EXAMPLE", "aws_access_key_id ", "."},
        {"api_key", "ghp_" + std::string("a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"), "token ", "\n"},
        {"api_key", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789", "", ""},
        {"api_key", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "slack: ", ""},
        {"api_key", "xapp-1-A012ABCDEFG-1234567890123-0a1b2c3d4e5f", "", ""},
        {"api_key", "sk-proj-4fG7hJ2kL9mN3pQ8rS1tV6wX0yZ5aB", "OPENAI_API_KEY ", " ok"},
        {"api_key", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "key ", ""},
        {"api_key",
         "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwi"
         "aWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
         "cookie ", ";"},
        {"api_key", "9f8e7d6c5b4a39281706f5e4d3c2b1a0", "api_key = \"", "\""},
        {"api_key", "Zx81Qw7ErT5yU3iO9pAs", "Authorization: Bearer ", ""},
        {"password_in_url", "postgres://admin:s3cr3tPass@db.example.com",
         "DATABASE_URL=", ":5432/app"},
        {"email", "jane.doe@example.co.uk", "Contact ", "."},
        {"phone", "+44 20 7946 0958", "Call ", " today"},
        {"phone", "(555) 123-4567", "Phone: ", ""},
        {"phone", "555-123-4567", "", ""},
        {"phone", "+1-202-555-0143", "tel ", ","},
        {"phone", "030 1234 5678", "Büro: ", ""},
        {"phone", "+4915112345678", "mobile ", ""},
        {"card_number", "4111 1111 1111 1111", "card ", " exp 12/27"},
        {"card_number", "5500-0000-0000-0004", "", ""},
        {"card_number", "378282246310005", "amex ", ""},
        {"iban", "GB82 WEST 1234 5698 7654 32", "IBAN: ", " BIC WESTGB22"},
        {"iban", "DE89370400440532013000", "Konto ", "."},
    };
    for (const auto& c : cases) {
        const std::string text = c.before + c.secret + c.after;
        const auto found = tb::scanText(text);
        QVERIFY2(found.size() == 1,
                 qPrintable(QString::fromStdString(text + " -> " + describe(found))));
        QCOMPARE(found[0].kind, c.kind);
        QCOMPARE(found[0].offset, c.before.size());
        QCOMPARE(found[0].length, c.secret.size());
        QCOMPARE(found[0].masked, tb::maskMatch(c.secret, c.kind));
        QVERIFY(found[0].masked.find('*') != std::string::npos);
        QVERIFY(found[0].masked != c.secret);
    }
    // Many unterminated headers, then one key with its END line: each header found, the last whole.
    std::string headers;
    for (int i = 0; i < 2000; ++i)
        headers += "-----BEGIN RSA PRIVATE KEY----- lost\n";
    const auto keys = tb::scanText(headers + key);
    QCOMPARE(keys.size(), size_t(2001));
    QCOMPARE(keys.back().length, key.size());
    // Several findings in one text come back in order; overlapping kinds resolve to one.
    const std::string mixed = "mail bob@example.org or ftp://bob:pa55w0rd@mail.example.org, card "
                              "4111111111111111";
    const auto found = tb::scanText(mixed);
    QCOMPARE(found.size(), size_t(3));
    QCOMPARE(found[0].kind, std::string("email"));
    QCOMPARE(found[1].kind, std::string("password_in_url"));
    QCOMPARE(found[2].kind, std::string("card_number"));
}

void TestDataCurate::scanLeavesOrdinaryTextAlone()
{
    const std::vector<std::string> clean = {
        "Released on 2024-01-15 at 10:30, version 1.2.3 and build 10.0.19041.1234.",
        "Dates: 15.01.2024, 01/15/2024, 2024-01-15T10:30:00Z, timestamp 20240115103000.",
        "Order #123456789 and order id ORD-2024-000123 shipped; invoice 48213990.",
        "We have 42 apples, 1234 oranges and 1,299,000 grapes at $1,299.99 each.",
        "Unix time 1700000000, coordinates 40.7128, -74.0060, IP 192.168.100.200.",
        "ISBN 978-3-16-148410-0 and ISBN-13 9780306406157.",
        "The sk-learn library; the token limit is 2048 tokens; token: short.",
        "api_key = your_api_key_here and password = hunter2",
        "Card 4111 1111 1111 1112 fails the checksum; GB83 WEST 1234 5698 7654 32 too.",
        "See http://example.com:8080/path and https://example.org/a@b for details.",
        "user@localhost is not an address with a domain; @handle neither.",
        "The quick brown fox jumps over the lazy dog. Prose with no secrets at all.",
        "Version v2.10.3, RFC 7231, section 4.3.1, page 12-14, score 3-1.",
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC "
        "KEY-----",
    };
    for (const auto& text : clean) {
        const auto found = tb::scanText(text);
        QVERIFY2(found.empty(),
                 qPrintable(QString::fromStdString(text + " -> " + describe(found))));
    }
    QVERIFY(tb::scanText("").empty());
    // Invalid UTF-8 around a finding does not stop the scan.
    QCOMPARE(tb::scanText("\xFF\xFE jane@example.com \xC3").size(), size_t(1));
}

void TestDataCurate::masking()
{
    QCOMPARE(tb::maskMatch("jane.doe@example.com", "email"), std::string("j*******@example.com"));
    QCOMPARE(tb::maskMatch("j@example.com", "email"), std::string("*@example.com"));
    QCOMPARE(tb::maskMatch("4111 1111 1111 1111", "card_number"),
             std::string("**** **** **** 1111"));
    QCOMPARE(tb::maskMatch("AKIAIOSFODNN7EXAMPLE", "api_key"), std::string("AK****************LE"));
    QCOMPARE(tb::maskMatch("GB82 WEST 1234 5698 7654 32", "iban"),
             std::string("GB** **** **** **** **** 32"));
    QCOMPARE(tb::maskMatch("+44 20 7946 0958", "phone"), std::string("+4* ** **** **58"));
    QCOMPARE(tb::maskMatch("postgres://admin:s3cr3t@db", "password_in_url"),
             std::string("postgres://admin:******@db"));
    QCOMPARE(tb::maskMatch("-----BEGIN EC PRIVATE KEY-----\nABCDEF\n-----END EC PRIVATE KEY-----",
                           "private_key"),
             std::string("-----BEGIN EC PRIVATE KEY-----****-----END EC PRIVATE KEY-----"));
    QCOMPARE(tb::maskMatch("abcdefg", "api_key"), std::string("a*****g"));
    QCOMPARE(tb::maskMatch("abcd", "api_key"), std::string("****"));
    // Characters, not bytes: a 6-character non-ASCII value keeps one at each end.
    QCOMPARE(tb::maskMatch("\u00E9bcde\u00E9", "api_key"), std::string("\u00E9****\u00E9"));
}

void TestDataCurate::lengthStatsNearestRank()
{
    // 1..10 shuffled: nearest rank 50% = ceil(5) -> 5th value 5; 95% = ceil(9.5) -> 10th = 10.
    const auto s = tb::lengthStats({5, 1, 4, 2, 3, 10, 7, 8, 6, 9});
    QCOMPARE(s.count, int64_t(10));
    QCOMPARE(s.min, int64_t(1));
    QCOMPARE(s.max, int64_t(10));
    QCOMPARE(s.median, int64_t(5));
    QCOMPARE(s.p95, int64_t(10));
    QCOMPARE(s.mean, 5.5);
    // 10, 20, ..., 200: median rank 10 -> 100; p95 rank 19 -> 190.
    std::vector<int64_t> twenty;
    for (int i = 20; i >= 1; --i)
        twenty.push_back(10 * i);
    const auto t = tb::lengthStats(twenty);
    QCOMPARE(t.median, int64_t(100));
    QCOMPARE(t.p95, int64_t(190));
    QCOMPARE(t.mean, 105.0);
    // {1, 2, 3, 4}: the lower middle; one value: itself; none: zeros.
    QCOMPARE(tb::lengthStats({4, 3, 2, 1}).median, int64_t(2));
    QCOMPARE(tb::lengthStats({7}).p95, int64_t(7));
    QCOMPARE(tb::lengthStats({}).count, int64_t(0));
    QCOMPARE(tb::countOver({1, 5, 10, 11, 100}, 10), int64_t(2));
    QCOMPARE(tb::countOver({}, 10), int64_t(0));
    // The tally holds each distinct value once with its count: 1..10 and 10 eleven times more are
    // 21 values, ranks 1-9 holding 1..9 and ranks 10-21 holding 10.
    tb::LengthTally tally;
    for (int64_t v : {5, 1, 4, 2, 3, 10, 7, 8, 6, 9})
        tally.add(v);
    tally.add(10, 11);
    const auto u = tally.stats();
    QCOMPARE(u.count, int64_t(21));
    QCOMPARE(u.median, int64_t(10));  // rank ceil(10.5) = 11
    QCOMPARE(u.p95, int64_t(10));
    QCOMPARE(u.min, int64_t(1));
    QCOMPARE(u.mean, (55.0 + 110.0) / 21.0);
    QCOMPARE(tally.countOver(9), int64_t(12));
    QCOMPARE(tally.countOver(10), int64_t(0));
    QCOMPARE(tally.histogram(2).counts, (std::vector<int64_t>{4, 17}));  // [0, 5) and [5, 10]
    QCOMPARE(tb::LengthTally().stats().count, int64_t(0));
}

void TestDataCurate::histogramEdges()
{
    std::vector<int64_t> values;
    for (int v = 0; v <= 100; ++v)
        values.push_back(v);
    auto h = tb::histogram(values, 10);
    QCOMPARE(h.edges, (std::vector<int64_t>{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}));
    QCOMPARE(h.counts, (std::vector<int64_t>{10, 10, 10, 10, 10, 10, 10, 10, 10, 11}));

    // 37..4210 in at most 8 bins: width 1000 (500 would need 9), first edge 0.
    h = tb::histogram({37, 999, 1000, 4210}, 8);
    QCOMPARE(h.edges, (std::vector<int64_t>{0, 1000, 2000, 3000, 4000, 5000}));
    QCOMPARE(h.counts, (std::vector<int64_t>{2, 1, 0, 0, 1}));

    h = tb::histogram({7, 7, 7}, 5);
    QCOMPARE(h.edges, (std::vector<int64_t>{7, 8}));
    QCOMPARE(h.counts, (std::vector<int64_t>{3}));
    h = tb::histogram({}, 5);
    QVERIFY(h.edges.empty() && h.counts.empty());
    QVERIFY_THROWS_EXCEPTION(tb::Error, tb::histogram({1}, 0));
}

void TestDataCurate::splitStratifiedAndSeeded()
{
    std::vector<std::string> labels;
    const std::map<std::string, int> sizes = {{"a", 600}, {"b", 300}, {"c", 97},
                                              {"d", 2},   {"e", 1},   {"", 37}};
    for (const auto& [label, n] : sizes)
        for (int i = 0; i < n; ++i)
            labels.push_back(label);
    std::mt19937_64 rng(5);
    std::shuffle(labels.begin(), labels.end(), rng);  // interleave the labels

    for (const double fraction : {0.1, 0.25, 0.01}) {
        const auto side = tb::splitAssign(labels, fraction, 42);
        QCOMPARE(side.size(), labels.size());
        for (const auto& [label, n] : sizes) {
            int validation = 0;
            for (size_t i = 0; i < labels.size(); ++i)
                validation += labels[i] == label && side[i] == 1;
            QVERIFY2(std::abs(validation - n * fraction) <= 1.0 + 1e-9,
                     qPrintable(QString::fromStdString(label)));
            if (n >= 2) {
                QVERIFY(validation >= 1);
                QVERIFY(validation <= n - 1);
            }
        }
        QCOMPARE(tb::splitAssign(labels, fraction, 42), side);
        QVERIFY(tb::splitAssign(labels, fraction, 43) != side);
    }
    // No labels: exactly the rounded fraction.
    const auto plain = tb::splitAssign(1000, {}, 0.2, 7);
    QCOMPARE(std::count(plain.begin(), plain.end(), 1), 200);
    QCOMPARE(tb::splitAssign(1000, {}, 0.2, 7), plain);
    QVERIFY(tb::splitAssign(1000, {}, 0.2, 8) != plain);
    const auto none = tb::splitAssign(10, {}, 0.0, 1);
    QCOMPARE(std::count(none.begin(), none.end(), 1), 0);
    const auto all = tb::splitAssign(10, {}, 1.0, 1);
    QCOMPARE(std::count(all.begin(), all.end(), 1), 10);
    QVERIFY_THROWS_EXCEPTION(tb::Error, tb::splitAssign(10, {}, 1.5, 1));
    QVERIFY_THROWS_EXCEPTION(tb::Error, tb::splitAssign(3, {"a"}, 0.5, 1));
}

void TestDataCurate::rehearsal()
{
    // ratio 0.1 with 900 task records: 100 general ones, 100 / (900 + 100) = 0.1.
    const auto picked = tb::rehearsalPick(10000, 900, 0.1, 3);
    QCOMPARE(picked.size(), size_t(100));
    QVERIFY(std::is_sorted(picked.begin(), picked.end()));
    QVERIFY(std::adjacent_find(picked.begin(), picked.end()) == picked.end());
    QVERIFY(picked.front() >= 0 && picked.back() < 10000);
    QCOMPARE(tb::rehearsalPick(10000, 900, 0.1, 3), picked);
    QVERIFY(tb::rehearsalPick(10000, 900, 0.1, 4) != picked);
    // Spread over the range: mean index near the middle (sd of the mean ~ 289).
    double mean = 0;
    for (const int64_t i : picked)
        mean += double(i) / double(picked.size());
    QVERIFY(std::abs(mean - 5000) < 1500);
    QCOMPARE(tb::rehearsalPick(10000, 300, 0.25, 1).size(), size_t(100));  // 100 / 400
    QCOMPARE(tb::rehearsalPick(50, 900, 0.5, 1).size(), size_t(50));       // capped
    QVERIFY(tb::rehearsalPick(100, 900, 0.0, 1).empty());
    QVERIFY_THROWS_EXCEPTION(tb::Error, tb::rehearsalPick(100, 900, 1.0, 1));
}

void TestDataCurate::kappaTextbook()
{
    // 2x2 table, ann rows / bea columns (yes, no): [[20, 5], [10, 15]], n = 50.
    // po = (20 + 15) / 50 = 0.7; ann yes 25/50 = 0.5, bea yes 30/50 = 0.6;
    // pe = 0.5 * 0.6 + 0.5 * 0.4 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    auto labels = tableLabels({{20, 5}, {10, 15}}, {"yes", "no"}, 0);
    auto pairs = tb::pairwiseAgreement(labels);
    QCOMPARE(pairs.size(), size_t(1));
    QCOMPARE(pairs[0].annotatorA, std::string("ann"));
    QCOMPARE(pairs[0].annotatorB, std::string("bea"));
    QCOMPARE(pairs[0].items, int64_t(50));
    QCOMPARE(pairs[0].agreed, int64_t(35));
    QVERIFY(std::abs(pairs[0].percent - 70.0) < 1e-12);
    QVERIFY(std::abs(pairs[0].kappa - 0.4) < 1e-12);

    // 3 categories, n = 100: [[25, 5, 0], [5, 30, 5], [0, 10, 20]].
    // po = (25 + 30 + 20) / 100 = 0.75; ann marginals 0.30, 0.40, 0.30; bea 0.30, 0.45, 0.25;
    // pe = 0.09 + 0.18 + 0.075 = 0.345; kappa = (0.75 - 0.345) / 0.655 = 0.618320610687...
    labels = tableLabels({{25, 5, 0}, {5, 30, 5}, {0, 10, 20}}, {"a", "b", "c"}, 1000);
    pairs = tb::pairwiseAgreement(labels);
    QCOMPARE(pairs.size(), size_t(1));
    QCOMPARE(pairs[0].items, int64_t(100));
    QVERIFY(std::abs(pairs[0].percent - 75.0) < 1e-12);
    QVERIFY(std::abs(pairs[0].kappa - 0.405 / 0.655) < 1e-12);
}

void TestDataCurate::kappaEdgeCasesAndDisagreements()
{
    // Three annotators; "cy" overlaps "ann" on two records only; pairs sorted by name.
    // clang-format off
    std::vector<tb::Label> labels = {
        {1, "bea", "x"}, {1, "ann", "x"}, {1, "cy", "x"},
        {2, "bea", "x"}, {2, "ann", "x"}, {2, "cy", "y"},
        {3, "bea", "x"}, {3, "ann", "x"},
        {4, "ann", "z"},                                   // one annotator: no pair, no disagreement
        {5, "bea", "y"}, {5, "bea", "x"}, {5, "ann", "x"}, // bea's last label counts
    };
    // clang-format on
    const auto pairs = tb::pairwiseAgreement(labels);
    QCOMPARE(pairs.size(), size_t(3));
    QCOMPARE(pairs[0].annotatorA + "/" + pairs[0].annotatorB, std::string("ann/bea"));
    QCOMPARE(pairs[1].annotatorA + "/" + pairs[1].annotatorB, std::string("ann/cy"));
    QCOMPARE(pairs[2].annotatorA + "/" + pairs[2].annotatorB, std::string("bea/cy"));
    // ann/bea: 4 shared records, all "x": pe = 1 and po = 1, so kappa is defined as 1.
    QCOMPARE(pairs[0].items, int64_t(4));
    QCOMPARE(pairs[0].agreed, int64_t(4));
    QCOMPARE(pairs[0].kappa, 1.0);
    // ann/cy: records 1, 2: ann x, x; cy x, y. po = 0.5, pe = 1 * 0.5 = 0.5, kappa 0.
    QCOMPARE(pairs[1].items, int64_t(2));
    QVERIFY(std::abs(pairs[1].percent - 50.0) < 1e-12);
    QVERIFY(std::abs(pairs[1].kappa) < 1e-12);
    // Systematic disagreement: ann always p, bea always q: po = 0, pe = 0, kappa 0.
    const auto opposite =
        tb::pairwiseAgreement({{1, "ann", "p"}, {1, "bea", "q"}, {2, "ann", "p"}, {2, "bea", "q"}});
    QCOMPARE(opposite[0].kappa, 0.0);
    // Worse than chance is negative: [[0, 5], [5, 0]]: po 0, pe 0.5, kappa -1.
    const auto worse = tb::pairwiseAgreement(tableLabels({{0, 5}, {5, 0}}, {"p", "q"}, 0));
    QVERIFY(std::abs(worse[0].kappa + 1.0) < 1e-12);

    QCOMPARE(tb::disagreements(labels), (std::vector<int64_t>{2}));
    QVERIFY(tb::pairwiseAgreement({}).empty());
    QVERIFY(tb::disagreements({}).empty());
}

// Speed report for the 100,000-record case, printed only when TB_DATA_CURATE_TIMING=1 (no timed
// assertions: performance belongs to benchmarks).
void TestDataCurate::timingReport()
{
    if (qEnvironmentVariable("TB_DATA_CURATE_TIMING") != QLatin1String("1"))
        QSKIP("set TB_DATA_CURATE_TIMING=1 for the 100,000-record timing report");
    auto base = plantedCorpus(95000, 5000, 99);
    std::vector<std::string> texts;
    texts.reserve(base.size());
    size_t bytes = 0;
    for (size_t i = 0; i < base.size(); ++i) {
        std::string t = base[i].substr(0, 500);
        if (i % 50 == 0)
            t += tbtest::numbered(" contact me at someone", i) + "@example.com or +44 20 7946 0958";
        if (i % 97 == 0)
            t = "Exact COPY " + base[i / 2].substr(0, 480);
        bytes += t.size();
        texts.push_back(std::move(t));
    }
    // Peak resident memory since the last reset (Linux; -1 elsewhere), to report each step's own.
    const auto resetPeak = [] {
        QFile f(QStringLiteral("/proc/self/clear_refs"));
        if (f.open(QIODevice::WriteOnly))
            f.write("5");
    };
    const auto peakMb = [] {
        QFile f(QStringLiteral("/proc/self/status"));
        if (!f.open(QIODevice::ReadOnly))
            return -1.0;
        for (const QByteArray& line : f.readAll().split('\n'))
            if (line.startsWith("VmHWM:"))
                return line.mid(6).trimmed().split(' ').front().toDouble() / 1024.0;
        return -1.0;
    };
    const auto currentMb = [] {
        QFile f(QStringLiteral("/proc/self/status"));
        if (!f.open(QIODevice::ReadOnly))
            return -1.0;
        for (const QByteArray& line : f.readAll().split('\n'))
            if (line.startsWith("VmRSS:"))
                return line.mid(6).trimmed().split(' ').front().toDouble() / 1024.0;
        return -1.0;
    };
    using Clock = std::chrono::steady_clock;
    const auto seconds = [](Clock::time_point a) {
        return std::chrono::duration<double>(Clock::now() - a).count();
    };
    std::vector<std::string>().swap(base);
#ifdef __GLIBC__
    malloc_trim(0);  // hand the generator's freed memory back so the peaks below are the steps' own
#endif
    const double inputMb = currentMb();
    resetPeak();
    auto t0 = Clock::now();
    tb::DedupOptions exactOnly;
    const auto exact = tb::findDuplicates(texts, exactOnly);
    const double exactSeconds = seconds(t0);
    const double exactPeakMb = peakMb() - inputMb;
    resetPeak();
    t0 = Clock::now();
    tb::DedupOptions near;
    near.nearThreshold = 0.8;
    const auto both = tb::findDuplicates(texts, near);
    const double nearSeconds = seconds(t0);
    const double nearPeakMb = peakMb() - inputMb;
    t0 = Clock::now();
    size_t findings = 0;
    std::vector<int64_t> lengths;
    for (const auto& t : texts) {
        findings += tb::scanText(t).size();
        lengths.push_back(static_cast<int64_t>(t.size()));
    }
    const double scanSeconds = seconds(t0);
    t0 = Clock::now();
    const auto stats = tb::lengthStats(lengths);
    const auto hist = tb::histogram(lengths, 20);
    const double statsSeconds = seconds(t0);
    qInfo("%zu records, %.1f MB (process %.0f MB with them): exact dedup %.2f s, peak +%.0f MB "
          "(%lld dups); exact+near(0.8) %.2f s, peak +%.0f MB (%lld exact, %lld near); scan %.2f s "
          "(%zu findings); stats+histogram %.3f s (median %lld, %zu bins)",
          texts.size(), bytes / 1e6, inputMb, exactSeconds, exactPeakMb,
          (long long)exact.exactDuplicates, nearSeconds, nearPeakMb,
          (long long)both.exactDuplicates, (long long)both.nearDuplicates, scanSeconds, findings,
          statsSeconds, (long long)stats.median, hist.counts.size());
}

QTEST_APPLESS_MAIN(TestDataCurate)
#include "test_data_curate.moc"
