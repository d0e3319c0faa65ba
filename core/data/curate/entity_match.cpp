// Entity-matching pairs: an inverted word index finds similar records of other entities (hard
// negatives).
#include "data/curate/entity_match.h"

#include "util/error.h"
#include "util/json_depth.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace tb {

using nlohmann::json;

namespace {

std::string valueText(const json& v)
{
    return v.is_string() ? v.get<std::string>() : v.dump();
}

std::vector<std::string> words(const EntityRecord& r)
{
    std::set<std::string> out;
    for (const auto& [key, value] : r.attributes.items()) {
        std::string word;
        for (char c : valueText(value) + " ") {
            const auto u = static_cast<unsigned char>(c);
            if (std::isalnum(u) || u >= 0x80) {
                word += char(std::tolower(u));
            } else if (!word.empty()) {
                out.insert(word);
                word.clear();
            }
        }
    }
    return {out.begin(), out.end()};
}

double jaccard(const std::vector<std::string>& a, const std::vector<std::string>& b)
{
    if (a.empty() && b.empty())
        return 1.0;
    size_t common = 0;
    for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
        if (a[i] == b[j]) {
            ++common;
            ++i;
            ++j;
        } else if (a[i] < b[j]) {
            ++i;
        } else {
            ++j;
        }
    }
    return double(common) / double(a.size() + b.size() - common);
}

// splitmix64: a platform-independent PRNG for reproducible pairs.
uint64_t nextRandom(uint64_t& state)
{
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

}  // namespace

double entitySimilarity(const EntityRecord& a, const EntityRecord& b)
{
    return jaccard(words(a), words(b));
}

std::vector<EntityPair> entityPairs(const std::vector<EntityRecord>& records,
                                    const EntityPairOptions& options)
{
    if (options.negativesPerPositive < 0 || options.maxPositivesPerEntity < 1)
        fail("entity pairs: negatives per positive must be >= 0 and positives per entity >= 1");
    std::vector<std::vector<std::string>> tokens(records.size());
    std::unordered_map<std::string, std::vector<size_t>> index;
    std::map<std::string, std::vector<size_t>> byEntity;
    for (size_t i = 0; i < records.size(); ++i) {
        tokens[i] = words(records[i]);
        for (const auto& w : tokens[i])
            index[w].push_back(i);
        byEntity[records[i].entityId].push_back(i);
    }
    if (byEntity.size() < 2)
        fail("entity pairs: need records of at least two entities (found ", byEntity.size(), ")");

    std::vector<EntityPair> pairs;
    uint64_t state = options.seed;
    std::set<std::pair<size_t, size_t>> used;
    // Words shared by very many records (e.g. "inc") say little and would make the search
    // quadratic.
    const size_t commonWord = std::max<size_t>(64, records.size() / 10);
    for (const auto& [entity, members] : byEntity) {
        int positives = 0;
        for (size_t x = 0; x < members.size() && positives < options.maxPositivesPerEntity; ++x) {
            for (size_t y = x + 1; y < members.size() && positives < options.maxPositivesPerEntity;
                 ++y) {
                const size_t a = members[x], b = members[y];
                pairs.push_back(EntityPair{a, b, true, jaccard(tokens[a], tokens[b]), false});
                ++positives;
                // Hard negatives for this positive: the records of other entities most similar to
                // either side.
                std::unordered_map<size_t, double> candidates;
                for (size_t side : {a, b})
                    for (const auto& w : tokens[side]) {
                        const auto& posting = index[w];
                        if (posting.size() > commonWord)
                            continue;
                        for (size_t c : posting)
                            if (records[c].entityId != entity && !candidates.count(c))
                                candidates[c] = std::max(jaccard(tokens[a], tokens[c]),
                                                         jaccard(tokens[b], tokens[c]));
                    }
                std::vector<std::pair<double, size_t>> ranked;
                for (const auto& [c, s] : candidates)
                    ranked.emplace_back(-s, c);
                std::sort(ranked.begin(), ranked.end());
                int negatives = 0;
                for (const auto& [negSim, c] : ranked) {
                    if (negatives == options.negativesPerPositive)
                        break;
                    const size_t anchor =
                        jaccard(tokens[a], tokens[c]) >= jaccard(tokens[b], tokens[c]) ? a : b;
                    const auto key = std::minmax(anchor, c);
                    if (!used.insert({key.first, key.second}).second)
                        continue;
                    pairs.push_back(EntityPair{anchor, c, false, -negSim, true});
                    ++negatives;
                }
                for (int attempt = 0; negatives < options.negativesPerPositive && attempt < 50;
                     ++attempt) {
                    const size_t c = size_t(nextRandom(state) % records.size());
                    if (records[c].entityId == entity)
                        continue;
                    const auto key = std::minmax(a, c);
                    if (!used.insert({key.first, key.second}).second)
                        continue;
                    pairs.push_back(EntityPair{a, c, false, jaccard(tokens[a], tokens[c]), false});
                    ++negatives;
                }
            }
        }
    }
    return pairs;
}

std::string renderEntityPrompt(const EntityRecord& a, const EntityRecord& b,
                               const std::string& question)
{
    auto describe = [](const EntityRecord& r) {
        std::string out;
        for (const auto& [key, value] : r.attributes.items())
            out += (out.empty() ? "" : "; ") + key + ": " + valueText(value);
        return out;
    };
    return "Record A: " + describe(a) + "\nRecord B: " + describe(b) + "\n" + question +
           " Answer Yes or No.";
}

NewRecord entityPairRecord(const std::vector<EntityRecord>& records, const EntityPair& pair,
                           const std::string& question)
{
    NewRecord r;
    r.kind = "prompt-completion";
    r.fields = {{"prompt", renderEntityPrompt(records[pair.a], records[pair.b], question)},
                {"completion", pair.same ? "Yes" : "No"},
                {"label", pair.same ? "match" : "non-match"},
                {"entity_a", records[pair.a].entityId},
                {"entity_b", records[pair.b].entityId},
                {"hard_negative", pair.hardNegative}};
    return r;
}

std::vector<EntityRecord> readEntityRecords(const std::string& path, const std::string& entityKey)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        fail(path, ": cannot open the entity records");
    std::vector<EntityRecord> out;
    std::string line;
    for (int64_t number = 1; std::getline(in, line); ++number) {
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        checkJsonDepth(line, path + ":" + std::to_string(number));
        json row;
        try {
            row = json::parse(line);
        } catch (const json::exception& e) {
            fail(path, ":", number, ": not valid JSON (", e.what(), ")");
        }
        if (!row.is_object())
            fail(path, ":", number, ": expected a JSON object");
        const auto it = row.find(entityKey);
        if (it == row.end() || !(it->is_string() || it->is_number_integer()))
            fail(path, ":", number, ": missing entity key \"", entityKey,
                 "\" (a string or integer)");
        EntityRecord r;
        r.entityId = valueText(*it);
        row.erase(entityKey);
        r.attributes = std::move(row);
        out.push_back(std::move(r));
    }
    if (out.empty())
        fail(path, ": no entity records");
    return out;
}

}  // namespace tb
