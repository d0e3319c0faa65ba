// Leak and PII scan: PCRE2 patterns compiled once (JIT when available), each match confirmed by a
// checksum or plausibility check, overlaps resolved by kind priority, previews masked.
#include "data/curate/scan.h"

#include "util/error.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>

namespace tb {

namespace {

// Kinds in priority order: where matches overlap, the lower value wins.
enum class Kind { PrivateKey, PasswordInUrl, ApiKey, Iban, Card, Email, Phone };

const char* kindName(Kind kind)
{
    switch (kind) {
    case Kind::PrivateKey:
        return "private_key";
    case Kind::PasswordInUrl:
        return "password_in_url";
    case Kind::ApiKey:
        return "api_key";
    case Kind::Iban:
        return "iban";
    case Kind::Card:
        return "card_number";
    case Kind::Email:
        return "email";
    case Kind::Phone:
        return "phone";
    }
    return "";
}

// What confirms a regex match.
enum class Check {
    None,
    PrivateKeyEnd,  // extend through the matching END line when there is one
    RandomValue,    // the checked group looks machine-generated (see looksRandom)
    Iban,           // trim to the country's length and pass mod-97
    Card,           // 13-19 digits, consistent grouping, Luhn
    PhoneDigits,    // 9-15 digits
};

struct PatternSpec {
    Kind kind;
    Check check;
    int reportGroup;  // capture group reported as the match (0 = all)
    int checkGroup;   // capture group the check looks at
    const char* regex;
};

// All patterns are ASCII and run on bytes (no UTF mode), so \w and \b are ASCII.
const PatternSpec kPatterns[] = {
    // PEM (RSA, EC, DSA, OPENSSH, ENCRYPTED, PKCS#8) and PGP private keys
    {Kind::PrivateKey, Check::PrivateKeyEnd, 0, 0,
     R"(-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)"},
    {Kind::PasswordInUrl, Check::None, 0, 0,
     R"((?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,19}://[^\s:/?#@"'<>]{1,128}:[^\s/?#@"'<>]{1,128}@[A-Za-z0-9\-_~\[\]]+(?:\.[A-Za-z0-9\-_~\[\]]+)*)"},
    // AWS access key ids
    {Kind::ApiKey, Check::None, 0, 0,
     R"((?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9]))"},
    // GitHub personal, OAuth, user-to-server, server-to-server, refresh and fine-grained tokens
    {Kind::ApiKey, Check::None, 0, 0,
     R"((?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{36,251}(?![A-Za-z0-9_]))"},
    {Kind::ApiKey, Check::None, 0, 0,
     R"((?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{22,250}(?![A-Za-z0-9_]))"},
    // Slack bot, user, refresh, legacy and app-level tokens
    {Kind::ApiKey, Check::None, 0, 0,
     R"((?<![A-Za-z0-9])(?:xox[baprs]|xapp)-[A-Za-z0-9\-]{10,250}(?![A-Za-z0-9\-]))"},
    // OpenAI-style secret keys: sk-, sk-proj-, ...
    {Kind::ApiKey, Check::RandomValue, 0, 1,
     R"((?<![A-Za-z0-9_\-])sk-(?:(?:proj|svcacct|admin|ant|live|test)-)?([A-Za-z0-9_\-]{20,250})(?![A-Za-z0-9_\-]))"},
    // Google API keys
    {Kind::ApiKey, Check::None, 0, 0,
     R"((?<![A-Za-z0-9_\-])AIza[0-9A-Za-z_\-]{35}(?![A-Za-z0-9_\-]))"},
    // JSON Web Tokens: base64url header and payload that both start with '{"'
    {Kind::ApiKey, Check::None, 0, 0,
     R"((?<![A-Za-z0-9_\-.])eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{16,}(?![A-Za-z0-9_\-]))"},
    // api_key = "...", token: ..., Authorization: Bearer ... with a long random-looking value
    {Kind::ApiKey, Check::RandomValue, 1, 1,
     R"((?i)(?<![A-Za-z0-9])(?:api[_\-]?key|api[_\-]?secret|secret[_\-]?key|client[_\-]?secret|access[_\-]?key|access[_\-]?token|auth[_\-]?token|refresh[_\-]?token|token|secret)["']?[ \t]{0,3}[:=][ \t]{0,3}["']?([A-Za-z0-9_\-+/=.~]{16,512}))"},
    {Kind::ApiKey, Check::RandomValue, 1, 1,
     R"((?i)(?<![A-Za-z0-9])bearer[ \t]+([A-Za-z0-9_\-+/=.~]{16,512}))"},
    {Kind::Iban, Check::Iban, 0, 0,
     R"((?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9]))"},
    {Kind::Card, Check::Card, 0, 0,
     R"((?<![\w\-.+])[2-6](?:[ \-]?[0-9]){12,18}(?![\w]|[\-.][0-9]))"},
    {Kind::Email, Check::None, 0, 0,
     R"((?<![A-Za-z0-9._%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?)*\.[A-Za-z]{2,24}(?![A-Za-z0-9\-]|\.[A-Za-z0-9]))"},
    // International (+CC ...), North American ((555) 123-4567, 555-123-4567) and trunk-prefixed
    // national numbers (020 7946 0958); never a bare digit run.
    {Kind::Phone, Check::PhoneDigits, 0, 0,
     R"((?<![\w+.\-/#])(?:\+[1-9][0-9]{0,2}(?:[ .\-]?\([0-9]{1,4}\))?(?:[ .\-]?[0-9]{1,5}){2,6}|\([0-9]{3}\) ?[0-9]{3}[ .\-][0-9]{4}|[0-9]{3}(?<sep>[ .\-])[0-9]{3}\k<sep>[0-9]{4}|0[0-9]{1,4}(?:[ \-][0-9]{2,4}){1,4})(?![\w]|[.\-/][0-9]))"},
};

std::string pcre2Message(int code)
{
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(code, buffer, sizeof(buffer));
    return reinterpret_cast<const char*>(buffer);
}

// The compiled patterns, built once per process (thread-safe static initialisation). Compiled code
// is read-only during matching; each scan brings its own match data.
struct CompiledPatterns {
    std::vector<pcre2_code*> codes;

    CompiledPatterns()
    {
        for (const PatternSpec& spec : kPatterns) {
            int error = 0;
            PCRE2_SIZE offset = 0;
            pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(spec.regex),
                                             PCRE2_ZERO_TERMINATED, 0, &error, &offset, nullptr);
            if (!code)
                fail("scan pattern for ", kindName(spec.kind), " does not compile at offset ",
                     offset, ": ", pcre2Message(error));
            pcre2_jit_compile(code,
                              PCRE2_JIT_COMPLETE);  // without JIT support, matching interprets
            codes.push_back(code);
        }
    }
    ~CompiledPatterns()
    {
        for (pcre2_code* code : codes)
            pcre2_code_free(code);
    }
};

const CompiledPatterns& compiledPatterns()
{
    static const CompiledPatterns patterns;
    return patterns;
}

bool isDigit(char c)
{
    return c >= '0' && c <= '9';
}

bool isUpper(char c)
{
    return c >= 'A' && c <= 'Z';
}

bool isLower(char c)
{
    return c >= 'a' && c <= 'z';
}

// A value that looks machine-generated rather than a word or a name: 16+ characters with both
// letters and digits, at least 8 distinct characters, and >= 3 bits of entropy per character.
bool looksRandom(std::string_view v)
{
    if (v.size() < 16)
        return false;
    int counts[256] = {};
    bool digit = false, letter = false;
    for (const char c : v) {
        ++counts[static_cast<unsigned char>(c)];
        digit |= isDigit(c);
        letter |= isUpper(c) || isLower(c);
    }
    if (!digit || !letter)
        return false;
    int distinct = 0;
    double entropy = 0;
    for (const int n : counts) {
        if (!n)
            continue;
        ++distinct;
        const double p = static_cast<double>(n) / static_cast<double>(v.size());
        entropy -= p * std::log2(p);
    }
    return distinct >= 8 && entropy >= 3.0;
}

// Registered IBAN lengths of common countries (ISO 13616 registry).
int ibanLength(std::string_view country)
{
    static const std::map<std::string_view, int> lengths = {
        {"AD", 24}, {"AE", 23}, {"AL", 28}, {"AT", 20}, {"AZ", 28}, {"BA", 20}, {"BE", 16},
        {"BG", 22}, {"BH", 22}, {"BR", 29}, {"CH", 21}, {"CR", 22}, {"CY", 28}, {"CZ", 24},
        {"DE", 22}, {"DK", 18}, {"DO", 28}, {"EE", 20}, {"EG", 29}, {"ES", 24}, {"FI", 18},
        {"FO", 18}, {"FR", 27}, {"GB", 22}, {"GE", 22}, {"GI", 23}, {"GL", 18}, {"GR", 27},
        {"HR", 21}, {"HU", 28}, {"IE", 22}, {"IL", 23}, {"IS", 26}, {"IT", 27}, {"JO", 30},
        {"KW", 30}, {"KZ", 20}, {"LB", 28}, {"LI", 21}, {"LT", 20}, {"LU", 20}, {"LV", 21},
        {"MC", 27}, {"MD", 24}, {"ME", 22}, {"MK", 19}, {"MT", 31}, {"MU", 30}, {"NL", 18},
        {"NO", 15}, {"PK", 24}, {"PL", 28}, {"PS", 29}, {"PT", 25}, {"QA", 29}, {"RO", 24},
        {"RS", 22}, {"SA", 24}, {"SE", 24}, {"SI", 19}, {"SK", 24}, {"SM", 27}, {"TN", 24},
        {"TR", 26}, {"UA", 29}, {"VG", 24}, {"XK", 20},
    };
    const auto it = lengths.find(country);
    return it == lengths.end() ? 0 : it->second;
}

// ISO 7064 mod 97-10 over a compact upper-case IBAN: rotate the first four characters to the end,
// letters become 10-35, the remainder must be 1.
bool ibanChecksumOk(std::string_view compact)
{
    int remainder = 0;
    for (size_t k = 0; k < compact.size(); ++k) {
        const char c = compact[(k + 4) % compact.size()];
        if (isDigit(c))
            remainder = (remainder * 10 + (c - '0')) % 97;
        else
            remainder = (remainder * 100 + (c - 'A' + 10)) % 97;
    }
    return remainder == 1;
}

// The accepted [begin, end) of an IBAN-shaped run of upper-case characters and single spaces:
// the country's registered length (or the longest valid 15-34 for others) ending at a space or at
// the end of the run, with a valid checksum.
std::optional<std::pair<size_t, size_t>> acceptIban(std::string_view text, size_t begin, size_t end)
{
    std::string compact;
    std::vector<size_t> ends;  // ends[k]: source offset just after compact character k
    for (size_t i = begin; i < end; ++i) {
        if (text[i] == ' ')
            continue;
        compact.push_back(text[i]);
        ends.push_back(i + 1);
    }
    const auto boundary = [&](size_t length) {
        return length == compact.size() || text[ends[length - 1]] == ' ';
    };
    const int registered = ibanLength(std::string_view(compact).substr(0, 2));
    for (size_t length = std::min<size_t>(34, compact.size()); length >= 15; --length) {
        if (registered && length != static_cast<size_t>(registered))
            continue;
        if (boundary(length) && ibanChecksumOk(std::string_view(compact).substr(0, length)))
            return std::make_pair(begin, ends[length - 1]);
    }
    return std::nullopt;
}

// 13-19 digits, one kind of separator used between groups of 3-6 digits (or none), an issuer
// prefix (2 only as Mastercard's 2221-2720, so 2020s dates and timestamps stay out), Luhn-valid.
bool plausibleCard(std::string_view m)
{
    std::string lead;
    for (const char c : m)
        if (isDigit(c) && lead.size() < 4)
            lead.push_back(c);
    if (lead[0] == '2' && (lead < "2221" || lead > "2720"))
        return false;
    int digits = 0, group = 0;
    char separator = 0;
    for (const char c : m) {
        if (isDigit(c)) {
            ++digits;
            ++group;
            continue;
        }
        if ((separator && c != separator) || group < 3 || group > 6)
            return false;
        separator = c;
        group = 0;
    }
    if (separator && (group < 3 || group > 6))
        return false;
    return digits >= 13 && digits <= 19 && luhnValid(m);
}

// Longest private-key body searched for its END line (bytes); a 4096-bit RSA PEM is ~3.3 KB.
constexpr size_t kKeyBodyLimit = 16384;

struct Found {
    Kind kind;
    size_t begin, end;
};

// Runs one pattern over text, appending confirmed matches.
void runPattern(const PatternSpec& spec, pcre2_code* code, std::string_view text,
                std::vector<Found>& found)
{
    const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
        pcre2_match_data_create_from_pattern(code, nullptr), &pcre2_match_data_free);
    const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    uint32_t options = 0;
    size_t at = 0;
    bool endSearched = false, beginSearched = false;  // private keys: next END and BEGIN lines
    size_t endAt = std::string_view::npos, beginAt = std::string_view::npos;
    while (at < text.size()) {
        const int rc = pcre2_match(code, subject, text.size(), at, options, data.get(), nullptr);
        if (rc == PCRE2_ERROR_NOMATCH)
            return;
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !(options & PCRE2_NO_JIT)) {
            options |= PCRE2_NO_JIT;  // the interpreter keeps its backtracking on the heap
            continue;
        }
        if (rc < 0)
            fail("scanning a ", text.size(), "-byte text for ", kindName(spec.kind), ": ",
                 pcre2Message(rc));
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.get());
        const auto group = [&](int g) -> std::pair<size_t, size_t> {
            if (g >= rc || ov[2 * g] == PCRE2_UNSET)
                return {ov[0], ov[0]};
            return {ov[2 * g], ov[2 * g + 1]};
        };
        const size_t matchBegin = ov[0];
        auto [begin, end] = group(spec.reportGroup);
        const auto [checkBegin, checkEnd] = group(spec.checkGroup);
        const std::string_view checked = text.substr(checkBegin, checkEnd - checkBegin);
        bool ok = true;
        switch (spec.check) {
        case Check::None:
            break;
        case Check::PrivateKeyEnd: {
            // The body runs to the END line, if one comes before the next BEGIN. Both are searched
            // for once and reused by later headers, so text full of bare headers stays linear.
            if (!endSearched || (endAt != std::string_view::npos && endAt < end)) {
                endAt = text.find("-----END ", end);
                endSearched = true;
            }
            if (!beginSearched || (beginAt != std::string_view::npos && beginAt < end)) {
                beginAt = text.find("-----BEGIN ", end);
                beginSearched = true;
            }
            if (endAt != std::string_view::npos && endAt - end <= kKeyBodyLimit &&
                endAt < beginAt) {
                const std::string marker =
                    cat("-----END ", checked.substr(11));  // after "-----BEGIN "
                const size_t limit = std::min(text.size(), end + kKeyBodyLimit + marker.size());
                const size_t close = text.substr(0, limit).find(marker, endAt);
                if (close != std::string_view::npos)
                    end = close + marker.size();
            }
            break;
        }
        case Check::RandomValue:
            ok = looksRandom(checked);
            break;
        case Check::Iban:
            if (const auto span = acceptIban(text, begin, end))
                std::tie(begin, end) = *span;
            else
                ok = false;
            break;
        case Check::Card:
            ok = plausibleCard(checked);
            break;
        case Check::PhoneDigits: {
            const auto digits = std::count_if(checked.begin(), checked.end(), isDigit);
            ok = digits >= 9 && digits <= 15;
            break;
        }
        }
        if (ok && end > begin) {
            found.push_back({spec.kind, begin, end});
            at = std::max(end, matchBegin + 1);
        } else {
            at = matchBegin + 1;
        }
    }
}

// Code points of UTF-8 text as byte ranges (a stray continuation byte counts as one).
std::vector<std::string_view> codePoints(std::string_view s)
{
    std::vector<std::string_view> out;
    for (size_t i = 0; i < s.size();) {
        size_t n = 1;
        while (i + n < s.size() && (static_cast<unsigned char>(s[i + n]) & 0xC0) == 0x80)
            ++n;
        out.push_back(s.substr(i, n));
        i += n;
    }
    return out;
}

// First and last `keep` characters other than spaces and dashes stay; 2 from 10 such characters,
// 1 from 6, else none.
std::string maskGeneric(std::string_view match)
{
    const auto chars = codePoints(match);
    const auto isSeparator = [](std::string_view c) { return c == " " || c == "-"; };
    const auto content = std::count_if(chars.begin(), chars.end(),
                                       [&](std::string_view c) { return !isSeparator(c); });
    const long keep = content >= 10 ? 2 : content >= 6 ? 1 : 0;
    std::string out;
    long index = 0;
    for (const std::string_view c : chars) {
        if (isSeparator(c)) {
            out.append(c);
            continue;
        }
        out.append(index < keep || index >= content - keep ? c : std::string_view("*"));
        ++index;
    }
    return out;
}

std::string maskEmail(std::string_view match)
{
    const size_t at = match.rfind('@');
    if (at == std::string_view::npos)
        return maskGeneric(match);
    const auto local = codePoints(match.substr(0, at));
    std::string out;
    for (size_t i = 0; i < local.size(); ++i)
        out.append(i == 0 && local.size() > 1 ? local[i] : std::string_view("*"));
    out.append(match.substr(at));
    return out;
}

std::string maskCard(std::string_view match)
{
    const auto digits = std::count_if(match.begin(), match.end(), isDigit);
    const long keepFrom = digits >= 8 ? digits - 4 : digits;  // shown: digits from this one on
    std::string out;
    long index = 0;
    for (const char c : match) {
        if (isDigit(c)) {
            out.push_back(index >= keepFrom ? c : '*');
            ++index;
        } else {
            out.push_back(c);
        }
    }
    return out;
}

std::string maskPrivateKey(std::string_view match)
{
    const size_t headerEnd = match.find("-----", 5);
    if (match.substr(0, 11) != "-----BEGIN " || headerEnd == std::string_view::npos)
        return maskGeneric(match);
    std::string out(match.substr(0, headerEnd + 5));
    out += "****";
    const size_t footer = match.rfind("-----END ");
    if (footer != std::string_view::npos && footer >= headerEnd + 5)
        out.append(match.substr(footer));
    return out;
}

std::string maskPasswordInUrl(std::string_view match)
{
    const size_t scheme = match.find("://");
    const size_t at = match.find('@', scheme == std::string_view::npos ? 0 : scheme + 3);
    if (scheme == std::string_view::npos || at == std::string_view::npos)
        return maskGeneric(match);
    const size_t colon = match.find(':', scheme + 3);
    if (colon == std::string_view::npos || colon > at)
        return maskGeneric(match);
    std::string out(match);
    for (size_t i = colon + 1; i < at; ++i)
        out[i] = '*';
    return out;
}

}  // namespace

std::vector<ScanMatch> scanText(std::string_view text)
{
    const CompiledPatterns& compiled = compiledPatterns();
    std::vector<Found> found;
    for (size_t p = 0; p < std::size(kPatterns); ++p)
        runPattern(kPatterns[p], compiled.codes[p], text, found);

    // Keep the highest-priority kind where matches overlap, then the earliest.
    std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
        return a.kind != b.kind ? a.kind < b.kind : a.begin < b.begin;
    });
    std::map<size_t, const Found*> accepted;  // by begin; accepted intervals never overlap
    for (const Found& f : found) {
        auto next = accepted.lower_bound(f.begin);
        if (next != accepted.end() && next->second->begin < f.end)
            continue;
        if (next != accepted.begin() && std::prev(next)->second->end > f.begin)
            continue;
        accepted.emplace(f.begin, &f);
    }
    std::vector<ScanMatch> out;
    out.reserve(accepted.size());
    for (const auto& [begin, f] : accepted) {
        ScanMatch m;
        m.kind = kindName(f->kind);
        m.offset = f->begin;
        m.length = f->end - f->begin;
        m.masked = maskMatch(text.substr(m.offset, m.length), m.kind);
        out.push_back(std::move(m));
    }
    return out;
}

bool luhnValid(std::string_view digits)
{
    int sum = 0, count = 0;
    for (size_t i = digits.size(); i-- > 0;) {
        const char c = digits[i];
        if (c == ' ' || c == '-')
            continue;
        if (!isDigit(c))
            return false;
        int d = c - '0';
        if (count % 2 == 1) {
            d *= 2;
            if (d > 9)
                d -= 9;
        }
        sum += d;
        ++count;
    }
    return count > 0 && sum % 10 == 0;
}

bool ibanValid(std::string_view iban)
{
    std::string compact;
    for (const char c : iban) {
        if (c == ' ')
            continue;
        if (isLower(c))
            compact.push_back(static_cast<char>(c - 'a' + 'A'));
        else if (isUpper(c) || isDigit(c))
            compact.push_back(c);
        else
            return false;
    }
    if (compact.size() < 15 || compact.size() > 34)
        return false;
    if (!isUpper(compact[0]) || !isUpper(compact[1]) || !isDigit(compact[2]) ||
        !isDigit(compact[3]))
        return false;
    const int registered = ibanLength(std::string_view(compact).substr(0, 2));
    if (registered && static_cast<int>(compact.size()) != registered)
        return false;
    return ibanChecksumOk(compact);
}

std::string maskMatch(std::string_view match, const std::string& kind)
{
    if (kind == "email")
        return maskEmail(match);
    if (kind == "card_number")
        return maskCard(match);
    if (kind == "private_key")
        return maskPrivateKey(match);
    if (kind == "password_in_url")
        return maskPasswordInUrl(match);
    return maskGeneric(match);
}

}  // namespace tb
