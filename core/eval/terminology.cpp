// Glossary files (TSV, CSV, JSON) and the terminology-adherence metric over casefolded text.
#include "eval/terminology.h"

#include "eval/unicode_text.h"

#include "util/error.h"
#include "util/file_util.h"
#include "util/json_depth.h"
#include "util/utf8.h"

#include <nlohmann/json.hpp>

namespace tb::eval {

namespace {

std::string trim(std::string_view s)
{
    const auto isBlank = [](char c) {
        return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
    };
    size_t b = 0, e = s.size();
    while (b < e && isBlank(s[b]))
        ++b;
    while (e > b && isBlank(s[e - 1]))
        --e;
    return std::string(s.substr(b, e - b));
}

// A header cell as compared: ASCII lowercase.
std::string normalizeHeader(std::string_view cell)
{
    std::string out(cell);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return out;
}

// The fields of one CSV line: a field starting with '"' runs to its closing quote, "" inside it
// being one quote. Throws with `where` for an unterminated quote or text after a closing one.
std::vector<std::string> csvFields(std::string_view line, const std::string& where)
{
    std::vector<std::string> fields;
    size_t i = 0;
    while (true) {
        while (i < line.size() && line[i] == ' ')
            ++i;
        std::string field;
        if (i < line.size() && line[i] == '"') {
            for (++i;; ++i) {
                if (i >= line.size())
                    fail(where, ": unterminated quoted field");
                if (line[i] == '"') {
                    if (i + 1 < line.size() && line[i + 1] == '"') {
                        field.push_back('"');
                        ++i;
                        continue;
                    }
                    ++i;
                    break;
                }
                field.push_back(line[i]);
            }
            while (i < line.size() && line[i] == ' ')
                ++i;
            if (i < line.size() && line[i] != ',')
                fail(where, ": text after a quoted field");
        } else {
            const size_t comma = line.find(',', i);
            field = line.substr(i, comma == std::string_view::npos ? line.size() - i : comma - i);
            i = comma == std::string_view::npos ? line.size() : comma;
        }
        fields.push_back(trim(field));
        if (i >= line.size())
            return fields;
        ++i;  // the comma
    }
}

std::vector<std::string> tabFields(std::string_view line)
{
    std::vector<std::string> fields;
    size_t start = 0;
    while (true) {
        const size_t tab = line.find('\t', start);
        fields.push_back(trim(line.substr(
            start, tab == std::string_view::npos ? std::string_view::npos : tab - start)));
        if (tab == std::string_view::npos)
            return fields;
        start = tab + 1;
    }
}

void addPair(Glossary& glossary, std::string source, std::string target, const std::string& where)
{
    if (source.empty())
        fail(where, ": empty source term");
    if (target.empty())
        fail(where, ": missing target term for \"", source, "\"");
    glossary.emplace_back(std::move(source), std::move(target));
}

Glossary parseLines(const std::string& path, const std::string& text)
{
    Glossary glossary;
    size_t start = 0, lineNumber = 0;
    bool first = true;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        std::string_view line = std::string_view(text).substr(start, end - start);
        if (line.ends_with('\r'))
            line.remove_suffix(1);
        start = end + 1;
        ++lineNumber;
        const std::string where = cat(path, ":", lineNumber);
        const std::string trimmed = trim(line);
        if (trimmed.empty() || trimmed[0] == '#')
            continue;
        if (const std::ptrdiff_t bad = invalidUtf8At(line); bad >= 0)
            fail(where, ": invalid UTF-8 at byte ", bad + 1, " of the line");
        const bool tab = line.find('\t') != std::string_view::npos;
        std::vector<std::string> fields = tab ? tabFields(line) : csvFields(trimmed, where);
        const bool header = first && fields.size() == 2 && normalizeHeader(fields[0]) == "source" &&
                            normalizeHeader(fields[1]) == "target";
        first = false;
        if (header)
            continue;
        if (fields.size() > 2)
            fail(where, ": ", fields.size(), " fields; expected a source and a target term");
        addPair(glossary, fields[0], fields.size() > 1 ? fields[1] : std::string(), where);
    }
    return glossary;
}

Glossary parseJson(const std::string& path, const std::string& text)
{
    checkJsonDepth(text, path);
    nlohmann::ordered_json doc;
    try {
        doc = nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        fail(path, ": bad JSON: ", e.what());
    }
    Glossary glossary;
    if (doc.is_object()) {
        for (const auto& [key, value] : doc.items()) {
            const std::string where = cat(path, ": key \"", key, "\"");
            if (!value.is_string())
                fail(where, ": the target term is not a string");
            addPair(glossary, trim(key), trim(value.get<std::string>()), where);
        }
    } else if (doc.is_array()) {
        for (size_t i = 0; i < doc.size(); ++i) {
            const auto& entry = doc[i];
            const std::string where = cat(path, ": entry ", i + 1);
            if (!entry.is_array() || entry.empty() || entry.size() > 2 || !entry[0].is_string() ||
                (entry.size() == 2 && !entry[1].is_string()))
                fail(where, ": expected [source, target] (two strings), got ", entry.dump());
            addPair(glossary, trim(entry[0].get<std::string>()),
                    entry.size() == 2 ? trim(entry[1].get<std::string>()) : std::string(), where);
        }
    } else {
        fail(path, ": expected an object {source: target} or a list of [source, target]");
    }
    return glossary;
}

// Whether the casefolded term occurs in the casefolded text on word boundaries (containsTerm).
bool containsFolded(std::u32string_view text, std::u32string_view term)
{
    if (term.empty())
        return false;
    const bool wordStart = isPythonWordChar(term.front());
    const bool wordEnd = isPythonWordChar(term.back());
    for (size_t at = text.find(term); at != std::u32string_view::npos;
         at = text.find(term, at + 1)) {
        const size_t end = at + term.size();
        if (wordStart && at > 0 && isPythonWordChar(text[at - 1]))
            continue;
        if (wordEnd && end < text.size() && isPythonWordChar(text[end]))
            continue;
        return true;
    }
    return false;
}

std::u32string fold(std::string_view text)
{
    return pythonCasefold(decodeUtf8(text));
}

class TerminologyMetric : public Metric {
public:
    explicit TerminologyMetric(const Glossary& glossary)
    {
        if (glossary.empty())
            fail("terminology: the glossary has no terms");
        for (const auto& [source, target] : glossary)
            m_terms.emplace_back(fold(source), fold(target));
    }
    std::string name() const override { return "terminology"; }
    bool needsReferences() const override { return false; }
    std::vector<double> stats(const MetricInput& input) const override
    {
        const std::u32string source = fold(input.source);
        const std::u32string prediction = fold(input.prediction);
        double satisfied = 0, present = 0;
        for (const auto& [sourceTerm, targetTerm] : m_terms) {
            if (!containsFolded(source, sourceTerm))
                continue;
            present += 1;
            satisfied += containsFolded(prediction, targetTerm) ? 1 : 0;
        }
        return {satisfied, present};
    }
    double score(const std::vector<double>& summed) const override
    {
        if (summed.size() != 2)
            fail("terminology: expected 2 statistics, got ", summed.size());
        return summed[1] > 0 ? summed[0] / summed[1] : 1.0;
    }

private:
    std::vector<std::pair<std::u32string, std::u32string>> m_terms;
};

}  // namespace

Glossary loadGlossary(const std::string& path)
{
    std::string text = readFile(path);
    if (text.starts_with("\xEF\xBB\xBF"))
        text.erase(0, 3);
    const std::string lead = trim(text.substr(0, 64));
    const bool json = path.ends_with(".json") || path.ends_with(".JSON") ||
                      (!lead.empty() && (lead[0] == '{' || lead[0] == '['));
    Glossary glossary = json ? parseJson(path, text) : parseLines(path, text);
    if (glossary.empty())
        fail(path, ": the glossary has no terms");
    return glossary;
}

bool containsTerm(std::string_view text, std::string_view term)
{
    return containsFolded(fold(text), fold(term));
}

std::unique_ptr<Metric> makeTerminologyMetric(Glossary glossary)
{
    return std::make_unique<TerminologyMetric>(glossary);
}

}  // namespace tb::eval
