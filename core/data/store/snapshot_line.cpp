// Snapshot lines: a canonical-form check over the stored JSON text (nlohmann::json's compact dump:
// sorted unique keys, integers, its escapes, valid UTF-8), then "record_id" spliced in at its
// sorted place. Anything else (floats, other escapes, spaces, a "record_id" key) is parsed and
// dumped as before.
#include "data/store/snapshot_line.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <vector>

namespace tb {
namespace {

constexpr int kMaxDepth = 256;

// One UTF-8 sequence at s[i] (i past it on success), with nlohmann's rules: no overlongs, no
// surrogates, nothing past U+10FFFF.
bool utf8(std::string_view s, size_t& i)
{
    const auto b = [&](size_t k) { return k < s.size() ? uint8_t(s[k]) : uint8_t(0); };
    const uint8_t c = b(i);
    const auto cont = [&](size_t k, uint8_t lo, uint8_t hi) { return b(k) >= lo && b(k) <= hi; };
    int n = 0;
    if (c >= 0xc2 && c <= 0xdf)
        n = cont(i + 1, 0x80, 0xbf) ? 2 : 0;
    else if (c == 0xe0)
        n = cont(i + 1, 0xa0, 0xbf) && cont(i + 2, 0x80, 0xbf) ? 3 : 0;
    else if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef)
        n = cont(i + 1, 0x80, 0xbf) && cont(i + 2, 0x80, 0xbf) ? 3 : 0;
    else if (c == 0xed)
        n = cont(i + 1, 0x80, 0x9f) && cont(i + 2, 0x80, 0xbf) ? 3 : 0;
    else if (c == 0xf0)
        n = cont(i + 1, 0x90, 0xbf) && cont(i + 2, 0x80, 0xbf) && cont(i + 3, 0x80, 0xbf) ? 4 : 0;
    else if (c >= 0xf1 && c <= 0xf3)
        n = cont(i + 1, 0x80, 0xbf) && cont(i + 2, 0x80, 0xbf) && cont(i + 3, 0x80, 0xbf) ? 4 : 0;
    else if (c == 0xf4)
        n = cont(i + 1, 0x80, 0x8f) && cont(i + 2, 0x80, 0xbf) && cont(i + 3, 0x80, 0xbf) ? 4 : 0;
    i += size_t(n);
    return n > 0;
}

// A string at s[i] (the opening quote) in the dump's escaping; *plain: it has no escapes.
bool canonicalString(std::string_view s, size_t& i, bool* plain = nullptr)
{
    ++i;
    if (plain)
        *plain = true;
    while (i < s.size()) {
        const auto c = uint8_t(s[i]);
        if (c == '"') {
            ++i;
            return true;
        }
        if (c < 0x20)
            return false;
        if (c == '\\') {
            if (plain)
                *plain = false;
            if (i + 1 >= s.size())
                return false;
            const char e = s[i + 1];
            if (std::strchr("\"\\bfnrt", e) && e != '\0') {
                i += 2;
                continue;
            }
            // \u00XX only for the control characters without a short form, lowercase hex.
            if (e != 'u' || i + 5 >= s.size() || s.compare(i + 2, 2, "00") != 0)
                return false;
            const char h = s[i + 4], l = s[i + 5];
            const int lo = (l >= '0' && l <= '9')   ? l - '0'
                           : (l >= 'a' && l <= 'f') ? l - 'a' + 10
                                                    : -1;
            if ((h != '0' && h != '1') || lo < 0)
                return false;
            const int code = (h - '0') * 16 + lo;
            if (code == 0x08 || code == 0x09 || code == 0x0a || code == 0x0c || code == 0x0d)
                return false;
            i += 6;
            continue;
        }
        if (c < 0x80) {
            ++i;
            continue;
        }
        if (!utf8(s, i))
            return false;
    }
    return false;
}

// An integer as the dump writes one (no leading zeros, no "-0"), small enough for int64.
bool canonicalInteger(std::string_view s, size_t& i)
{
    const size_t start = i;
    if (s[i] == '-')
        ++i;
    const size_t digits = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9')
        ++i;
    const size_t n = i - digits;
    if (n == 0 || n > 18 || (s[digits] == '0' && (n > 1 || s[start] == '-')))
        return false;
    // A fraction or exponent makes it a float: left to the parser.
    return i >= s.size() || (s[i] != '.' && s[i] != 'e' && s[i] != 'E');
}

bool canonicalValue(std::string_view s, size_t& i, int depth, std::vector<size_t>* topKeys,
                    size_t* topClose);

bool canonicalObject(std::string_view s, size_t& i, int depth, std::vector<size_t>* keys,
                     size_t* close)
{
    ++i;
    std::string_view previous;
    bool first = true;
    while (i < s.size()) {
        if (s[i] == '}') {
            if (close)
                *close = i;
            ++i;
            return true;
        }
        if (!first) {
            if (s[i] != ',')
                return false;
            ++i;
        }
        if (i >= s.size() || s[i] != '"')
            return false;
        const size_t keyStart = i;
        bool plain = false;
        if (!canonicalString(s, i, &plain) || !plain)
            return false;  // keys with escapes: their order is the unescaped one, left to the
                           // parser
        const std::string_view key = s.substr(keyStart + 1, i - keyStart - 2);
        if (!first && !(previous < key))
            return false;
        previous = key;
        first = false;
        if (keys)
            keys->push_back(keyStart);
        if (i >= s.size() || s[i] != ':')
            return false;
        ++i;
        if (!canonicalValue(s, i, depth + 1, nullptr, nullptr))
            return false;
    }
    return false;
}

bool canonicalValue(std::string_view s, size_t& i, int depth, std::vector<size_t>* topKeys,
                    size_t* topClose)
{
    if (i >= s.size() || depth > kMaxDepth)
        return false;
    switch (s[i]) {
    case '{':
        return canonicalObject(s, i, depth, topKeys, topClose);
    case '[': {
        ++i;
        if (i < s.size() && s[i] == ']') {
            ++i;
            return true;
        }
        while (true) {
            if (!canonicalValue(s, i, depth + 1, nullptr, nullptr) || i >= s.size())
                return false;
            if (s[i] == ']') {
                ++i;
                return true;
            }
            if (s[i] != ',')
                return false;
            ++i;
        }
    }
    case '"':
        return canonicalString(s, i);
    case 't':
    case 'f':
    case 'n':
        for (const char* word : {"true", "false", "null"})
            if (s.compare(i, std::strlen(word), word) == 0) {
                i += std::strlen(word);
                return true;
            }
        return false;
    default:
        return (s[i] == '-' || (s[i] >= '0' && s[i] <= '9')) && canonicalInteger(s, i);
    }
}

// The line spliced from canonical text; false when the text is not canonical or has its own
// "record_id" (the parser's overwrite decides that one).
bool splice(std::string_view fields, int64_t recordId, std::string& line)
{
    std::vector<size_t> keys;  // offsets of the top-level keys' opening quotes
    size_t close = 0, i = 0;
    if (fields.empty() || fields[0] != '{' || !canonicalValue(fields, i, 0, &keys, &close) ||
        i != fields.size())
        return false;
    constexpr std::string_view name = "record_id";
    size_t at = close;  // after every key: before the closing brace
    bool last = true;
    for (const size_t k : keys) {
        const std::string_view key = fields.substr(k + 1, fields.find('"', k + 1) - k - 1);
        if (key == name)
            return false;
        if (key > name) {
            at = k;
            last = false;
            break;
        }
    }
    line.clear();
    line.reserve(fields.size() + 32);
    line.append(fields.substr(0, at));
    if (last && !keys.empty())
        line += ',';
    line += "\"record_id\":";
    line += std::to_string(recordId);
    if (!last)
        line += ',';
    line.append(fields.substr(at));
    return true;
}

}  // namespace

std::string snapshotLine(std::string_view fieldsJson, int64_t recordId)
{
    std::string line;
    if (splice(fieldsJson, recordId, line))
        return line;
    nlohmann::json fields = nlohmann::json::parse(fieldsJson);
    fields["record_id"] = recordId;
    return fields.dump();
}

}  // namespace tb
