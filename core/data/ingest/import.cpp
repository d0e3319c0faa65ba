// Dataset import: container choice (JSONL, JSON array, CSV/TSV, documents), row format detection
// and normalisation into record kinds, and per-row rejections with 1-based line numbers.
#include "data/ingest/import.h"

#include "data/ingest/csv_reader.h"
#include "data/record.h"
#include "util/error.h"
#include "util/join.h"
#include "util/json_depth.h"
#include "util/utf8.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string_view>
#include <unordered_set>

namespace tb {
namespace {

using nlohmann::json;

constexpr ImportFormat kFormats[] = {
    ImportFormat::Auto,     ImportFormat::Alpaca,           ImportFormat::Chat,
    ImportFormat::ShareGpt, ImportFormat::PromptCompletion, ImportFormat::Text,
    ImportFormat::Csv,      ImportFormat::Documents};

const std::string kRowLimitText = cat(kImportRowLimit >> 20, " MiB row limit");

bool isSpace(char c)
{
    return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

bool isBlank(std::string_view s)
{
    return std::all_of(s.begin(), s.end(), isSpace);
}

std::string lowerExtension(const std::string& path)
{
    std::string ext = std::filesystem::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return ext;
}

std::string hexByte(unsigned char b)
{
    char text[8];
    std::snprintf(text, sizeof text, "0x%02X", b);
    return text;
}

// "not valid UTF-8 (byte 0xFF at column 17)" for the first bad byte of a line, or "" when valid.
// columnBase: bytes of the physical line before `text` (a skipped byte order mark).
std::string utf8Problem(std::string_view text, int64_t columnBase = 0)
{
    const std::ptrdiff_t at = invalidUtf8At(text);
    if (at < 0)
        return "";
    return cat("not valid UTF-8 (byte ", hexByte(static_cast<unsigned char>(text[at])),
               " at column ", columnBase + at + 1, ")");
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; the rest is what users need.
std::string jsonReason(const json::exception& e)
{
    std::string what = e.what();
    if (!what.empty() && what.front() == '[') {
        const size_t close = what.find("] ");
        if (close != std::string::npos)
            what = what.substr(close + 2);
    }
    return what;
}

std::string withArticle(const json& value)
{
    if (value.is_null())
        return "null";
    const std::string name = value.type_name();
    return (name[0] == 'a' || name[0] == 'o' ? "an " : "a ") + name;
}

// ---- JSON rows
// ---------------------------------------------------------------------------------------

const char* kindOf(ImportFormat format)
{
    switch (format) {
    case ImportFormat::Alpaca:
        return "alpaca";
    case ImportFormat::Chat:
    case ImportFormat::ShareGpt:
        return "chat";
    case ImportFormat::PromptCompletion:
        return "prompt-completion";
    default:
        return "text";
    }
}

// The format a row's keys name outright (the first such row fixes an Auto import's format).
std::optional<ImportFormat> detectFormat(const json& row)
{
    if (row.contains("messages"))
        return ImportFormat::Chat;
    if (row.contains("conversations"))
        return ImportFormat::ShareGpt;
    if (row.contains("instruction") && row.contains("output"))
        return ImportFormat::Alpaca;
    if (row.contains("prompt") && row.contains("completion"))
        return ImportFormat::PromptCompletion;
    if (row.contains("text"))
        return ImportFormat::Text;
    return std::nullopt;
}

// The format a row's keys hint at when they name none outright (to say what is missing).
std::optional<ImportFormat> guessFormat(const json& row)
{
    if (const auto format = detectFormat(row))
        return format;
    if (row.contains("instruction") || row.contains("output"))
        return ImportFormat::Alpaca;
    if (row.contains("prompt") || row.contains("completion"))
        return ImportFormat::PromptCompletion;
    return std::nullopt;
}

// ShareGPT {"conversations": [{"from": "human"|"gpt"|"system", "value": ...}]} -> chat messages.
std::optional<std::string> convertShareGpt(json& row)
{
    const auto it = row.find("conversations");
    if (it == row.end())
        return std::string("missing field \"conversations\"");
    if (!it->is_array())
        return cat("field \"conversations\" is ", withArticle(*it), ", expected an array");
    if (it->empty())
        return std::string("empty conversation");
    json messages = json::array();
    for (size_t i = 0; i < it->size(); ++i) {
        const json& turn = (*it)[i];
        const std::string where = cat("conversations[", i, "]");
        if (!turn.is_object())
            return cat(where, " is ", withArticle(turn), ", expected an object");
        const auto from = turn.find("from");
        if (from == turn.end())
            return cat(where, ".from is missing");
        if (!from->is_string())
            return cat(where, ".from is ", withArticle(*from), ", expected a string");
        const std::string& f = from->get_ref<const std::string&>();
        const char* role = f == "human" || f == "user"      ? "user"
                           : f == "gpt" || f == "assistant" ? "assistant"
                           : f == "system"                  ? "system"
                                                            : nullptr;
        if (!role)
            return cat(where, ".from is \"", f, "\"; expected human, gpt or system");
        const auto value = turn.find("value");
        if (value == turn.end())
            return cat(where, ".value is missing");
        if (!value->is_string())
            return cat(where, ".value is ", withArticle(*value), ", expected a string");
        if (value->get_ref<const std::string&>().empty() && std::string(role) != "system")
            return cat(where, ".value is empty");
        messages.push_back(json{{"role", role}, {"content", *value}});
    }
    row.erase("conversations");
    row["messages"] = std::move(messages);
    return std::nullopt;
}

// Turns JSON row text into records, fixing an Auto import's format at the first row that names one.
class JsonRows {
public:
    explicit JsonRows(ImportFormat format) : m_format(format) {}
    ImportFormat format() const { return m_format; }

    // Fills record.kind and record.fields, or returns why the row is rejected.
    std::optional<std::string> take(std::string_view text, ImportedRecord& record)
    {
        if (jsonTooDeep(text))
            return cat("JSON nested deeper than ", kMaxJsonDepth, " levels");
        json row;
        try {
            row = json::parse(text);
        } catch (const json::exception& e) {
            return "not valid JSON: " + jsonReason(e);
        }
        if (!row.is_object())
            return cat("expected a JSON object, got ", withArticle(row));
        const std::optional<ImportFormat> named = detectFormat(row);
        ImportFormat use = m_format;
        if (use == ImportFormat::Auto) {
            if (named) {
                use = m_format = *named;
            } else if (const auto guess = guessFormat(row)) {
                use = *guess;  // reject with what is missing, without fixing the format
            } else {
                return std::string("no known fields (expected instruction/output, messages, "
                                   "conversations, prompt/completion or text)");
            }
        }
        std::optional<std::string> problem;
        if (use == ImportFormat::ShareGpt)
            problem = convertShareGpt(row);
        if (!problem)
            problem = validateRecord(kindOf(use), row);
        if (problem) {
            const auto hint = guessFormat(row);
            if (hint && *hint != use &&
                !(use == ImportFormat::Chat && *hint == ImportFormat::ShareGpt))
                *problem += cat(" (the row looks like ", importFormatName(*hint), "; the file is ",
                                importFormatName(use), ")");
            return problem;
        }
        record.kind = kindOf(use);
        record.fields = std::move(row);
        return std::nullopt;
    }

private:
    ImportFormat m_format;
};

// Collects records and rejections, and turns "nothing imported" into the whole-file error.
class Sink {
public:
    Sink(const std::string& path, const std::function<void(ImportedRecord&&)>& onRecord)
        : m_path(path), m_onRecord(onRecord)
    {
    }
    void accept(ImportedRecord&& record)
    {
        ++m_summary.imported;
        if (m_onRecord)
            m_onRecord(std::move(record));
    }
    void reject(int64_t line, std::string reason)
    {
        m_summary.rejected.push_back({line, std::move(reason)});
    }
    ImportSummary finish(ImportFormat format, const char* whenNoRows)
    {
        m_summary.format = format;
        if (m_summary.imported > 0)
            return std::move(m_summary);
        if (m_summary.rejected.empty())
            fail(m_path, ": ", whenNoRows);
        const ImportRejection& first = m_summary.rejected.front();
        const size_t more = m_summary.rejected.size() - 1;
        if (more == 0)
            fail(m_path, ":", first.line, ": ", first.reason);
        fail(m_path, ":", first.line, ": ", first.reason, " (nothing imported; ", more,
             more == 1 ? " more row" : " more rows", " rejected)");
    }

private:
    const std::string& m_path;
    const std::function<void(ImportedRecord&&)>& m_onRecord;
    ImportSummary m_summary;
};

// ---- JSON Lines
// --------------------------------------------------------------------------------------

ImportSummary importJsonLines(BlockReader& blocks, ImportFormat format, Sink& sink)
{
    JsonRows rows(format);
    LineReader lines(blocks, kImportRowLimit);
    Line line;
    while (lines.next(line)) {
        if (line.oversize) {
            sink.reject(line.number,
                        cat("line is ", megabytes(line.length), ", over the ", kRowLimitText));
            continue;
        }
        std::string_view text = line.text;
        int64_t bom = 0;
        if (line.number == 1 && text.substr(0, 3) == "\xEF\xBB\xBF") {
            text.remove_prefix(3);
            bom = 3;
        }
        if (!text.empty() && text.back() == '\r')
            text.remove_suffix(1);
        if (isBlank(text))
            continue;
        if (std::string problem = utf8Problem(text, bom); !problem.empty()) {
            sink.reject(line.number, std::move(problem));
            continue;
        }
        ImportedRecord record;
        record.line = line.number;
        record.byteOffset = line.offset + bom;
        if (auto problem = rows.take(text, record))
            sink.reject(line.number, std::move(*problem));
        else
            sink.accept(std::move(record));
    }
    return sink.finish(rows.format(), "no rows (only blank lines)");
}

// ---- JSON array
// --------------------------------------------------------------------------------------

// Splits a top-level JSON array into element texts as the bytes stream by (strings and nesting
// tracked, values not parsed), so a bad element is rejected alone and memory stays at one element.
ImportSummary importJsonArray(BlockReader& blocks, ImportFormat format, Sink& sink)
{
    enum class Phase { BeforeArray, ExpectElement, InElement, AfterArray };
    JsonRows rows(format);
    Phase phase = Phase::BeforeArray;
    int64_t line = 1, column = 0, offset = 0;  // position of the byte being read (column 1-based)
    std::string element;
    int64_t elementLine = 0, elementColumn = 0, elementOffset = 0, elementBytes = 0;
    int depth = 0;
    bool inString = false, escape = false, anyElement = false;

    auto finishElement = [&]() {
        anyElement = true;
        if (elementBytes > kImportRowLimit) {
            sink.reject(elementLine, cat("array element is ", megabytes(elementBytes),
                                         ", over the ", kRowLimitText));
        } else if (const std::ptrdiff_t at = invalidUtf8At(element); at >= 0) {
            // Line and column of the bad byte inside the element.
            const std::string_view before(element.data(), static_cast<size_t>(at));
            const size_t nl = before.rfind('\n');
            const int64_t badLine = elementLine + std::count(before.begin(), before.end(), '\n');
            const int64_t badColumn =
                nl == std::string_view::npos ? elementColumn + at : static_cast<int64_t>(at - nl);
            const std::string where = badLine == elementLine
                                          ? cat("column ", badColumn)
                                          : cat("line ", badLine, ", column ", badColumn);
            sink.reject(elementLine,
                        cat("not valid UTF-8 (byte ",
                            hexByte(static_cast<unsigned char>(element[at])), " at ", where, ")"));
        } else {
            ImportedRecord record;
            record.line = elementLine;
            record.byteOffset = elementOffset;
            if (auto problem = rows.take(element, record))
                sink.reject(elementLine, std::move(*problem));
            else
                sink.accept(std::move(record));
        }
        element.clear();
        elementBytes = 0;
    };

    for (std::string_view block = blocks.next(); !block.empty(); block = blocks.next()) {
        for (size_t i = 0; i < block.size(); ++i, ++offset) {
            const char c = block[i];
            if (c == '\n') {
                ++line;
                column = 0;
            } else {
                ++column;
            }
            if (phase == Phase::InElement) {
                if (inString) {
                    if (escape)
                        escape = false;
                    else if (c == '\\')
                        escape = true;
                    else if (c == '"')
                        inString = false;
                } else if (c == '"') {
                    inString = true;
                } else if (c == '{' || c == '[') {
                    ++depth;
                } else if ((c == '}' || c == ']') && depth > 0) {
                    --depth;
                } else if (depth == 0 && (c == ',' || c == ']')) {
                    finishElement();
                    phase = c == ',' ? Phase::ExpectElement : Phase::AfterArray;
                    continue;
                }
                ++elementBytes;
                if (elementBytes <= kImportRowLimit)
                    element += c;
                else if (!element.empty())
                    std::string().swap(element);
                continue;
            }
            if (isSpace(c) || (offset < 3 && phase == Phase::BeforeArray &&
                               static_cast<unsigned char>(c) >= 0x80))  // byte order mark
                continue;
            if (phase == Phase::BeforeArray && c == '[') {
                phase = Phase::ExpectElement;
            } else if (phase == Phase::ExpectElement && c == ']' && !anyElement) {
                phase = Phase::AfterArray;  // []
            } else if (phase == Phase::ExpectElement && c != ']' && c != ',') {
                phase = Phase::InElement;
                elementLine = line;
                elementColumn = column;
                elementOffset = offset;
                elementBytes = 0;
                depth = 0;
                inString = escape = false;
                --i, --offset;  // read this byte again as the element's first
                if (c == '\n')
                    --line;
                else
                    --column;
            } else {
                fail(blocks.path(), ":", line, ": unexpected '", std::string(1, c), "' at column ",
                     column,
                     phase == Phase::AfterArray ? " after the end of the JSON array"
                                                : " in the JSON array (expected a value)");
            }
        }
    }
    if (phase == Phase::InElement) {
        sink.reject(elementLine, "the JSON array ends inside this element (the file is cut off?)");
        phase = Phase::AfterArray;
    } else if (phase != Phase::AfterArray) {
        sink.reject(line, "the JSON array is not closed with ']' (the file is cut off?)");
    }
    return sink.finish(rows.format(), "the JSON array is empty");
}

// ---- CSV / TSV
// ---------------------------------------------------------------------------------------

// The record kinds a CSV can fill and their fields (the first ones required).
struct CsvKind {
    const char* kind;
    std::vector<std::string> required;
    std::vector<std::string> optional;
};
const std::vector<CsvKind> kCsvKinds = {
    {"alpaca", {"instruction", "output"}, {"input"}},
    {"prompt-completion", {"prompt", "completion"}, {}},
    {"text", {"text"}, {}},
};

std::string trimmedLower(const std::string& s)
{
    const size_t b = s.find_first_not_of(" \t");
    const size_t e = s.find_last_not_of(" \t");
    std::string out = b == std::string::npos ? "" : s.substr(b, e - b + 1);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

ImportSummary importCsv(BlockReader& blocks, const ImportOptions& options, char delimiter,
                        Sink& sink)
{
    const std::string& path = blocks.path();
    LineReader lines(blocks, kImportRowLimit);
    CsvReader reader(lines, delimiter, kImportRowLimit);
    CsvRecord header;
    if (!reader.next(header))
        fail(path, ": file is empty");
    if (!header.problem.empty())
        fail(path, ":", header.line, ": header row: ", header.problem);
    const std::vector<std::string>& names = header.fields;
    std::unordered_set<std::string_view> seen;  // linear in the columns (a header may hold 10^5)
    for (const std::string& name : names)
        if (!name.empty() && !seen.insert(name).second)
            fail(path, ":", header.line, ": column \"", name, "\" appears twice in the header");

    // field -> column index
    std::map<std::string, size_t> mapped;
    const CsvKind* kind = nullptr;
    if (!options.columns.empty()) {
        for (const auto& [field, column] : options.columns) {
            const bool known =
                std::any_of(kCsvKinds.begin(), kCsvKinds.end(), [&](const CsvKind& k) {
                    return std::count(k.required.begin(), k.required.end(), field) +
                               std::count(k.optional.begin(), k.optional.end(), field) >
                           0;
                });
            if (!known)
                fail(path, ": the column mapping names field \"", field,
                     "\"; CSV fields are instruction, input, output, prompt, completion and text");
            const auto at = std::find(names.begin(), names.end(), column);
            if (at == names.end())
                fail(path, ": no column \"", column, "\" (mapped to field \"", field,
                     "\"); the header has ", join(names, ", ", "\""));
            mapped[field] = static_cast<size_t>(at - names.begin());
        }
        for (const CsvKind& k : kCsvKinds) {
            const bool all = std::all_of(k.required.begin(), k.required.end(),
                                         [&](const std::string& f) { return mapped.count(f) > 0; });
            const bool only = std::all_of(mapped.begin(), mapped.end(), [&](const auto& m) {
                return std::count(k.required.begin(), k.required.end(), m.first) +
                           std::count(k.optional.begin(), k.optional.end(), m.first) >
                       0;
            });
            if (all && only)
                kind = &k;
        }
        if (!kind)
            fail(path,
                 ": the mapped fields do not make one record kind; map instruction and output "
                 "(and optionally input), or prompt and completion, or text");
    } else {
        for (const CsvKind& k : kCsvKinds) {
            std::map<std::string, size_t> found;
            for (const std::vector<std::string>* list : {&k.required, &k.optional})
                for (const std::string& field : *list)
                    for (size_t i = 0; i < names.size(); ++i)
                        if (trimmedLower(names[i]) == field && !found.count(field))
                            found[field] = i;
            if (std::all_of(k.required.begin(), k.required.end(),
                            [&](const std::string& f) { return found.count(f) > 0; })) {
                kind = &k;
                mapped = std::move(found);
                break;
            }
        }
        if (!kind)
            fail(path, ":", header.line,
                 ": no columns named instruction and output, prompt and "
                 "completion, or text; the header has ",
                 join(names, ", ", "\""), " (map columns to fields to import this file)");
    }

    // Columns that hold no field are kept as extra string fields under their header.
    std::vector<std::string> keys(names.size());
    for (size_t i = 0; i < names.size(); ++i) {
        keys[i] = names[i].empty() ? cat("column ", i + 1) : names[i];
        if (mapped.count(keys[i]))
            keys[i] += " (column)";  // an unmapped column named like a mapped field
    }
    for (const auto& [field, column] : mapped)
        keys[column] = field;

    CsvRecord row;
    while (reader.next(row)) {
        if (!row.problem.empty()) {
            sink.reject(row.line, row.problem);
            continue;
        }
        if (row.fields.size() != names.size()) {
            sink.reject(row.line, cat("row has ", row.fields.size(),
                                      row.fields.size() == 1 ? " column" : " columns",
                                      ", the header ", names.size()));
            continue;
        }
        ImportedRecord record;
        record.kind = kind->kind;
        record.line = row.line;
        record.byteOffset = row.offset;
        record.fields = json::object();
        for (size_t i = 0; i < names.size(); ++i)
            record.fields[keys[i]] = std::move(row.fields[i]);
        if (auto problem = validateRecord(record.kind, record.fields)) {
            // Name the column when the field came from one with another name.
            for (const auto& [field, column] : mapped)
                if (names[column] != field &&
                    problem->find(cat("\"", field, "\"")) != std::string::npos)
                    *problem += cat(" (column \"", names[column], "\")");
            sink.reject(row.line, std::move(*problem));
            continue;
        }
        sink.accept(std::move(record));
    }
    return sink.finish(ImportFormat::Csv, "no rows after the header");
}

// ---- Documents
// ---------------------------------------------------------------------------------------

ImportSummary importDocument(BlockReader& blocks, const ImportOptions& options, Sink& sink)
{
    const std::string& path = blocks.path();
    if (!options.tokenizer)
        fail(path, ": importing a document needs the model's tokenizer to count chunk tokens "
                   "(ImportOptions::tokenizer is not set)");
    validateChunkOptions(options.chunk);
    if (blocks.size() > kImportDocumentLimit)
        fail(path, ": document is ", megabytes(blocks.size()), ", over the ",
             kImportDocumentLimit >> 20, " MiB document limit");
    std::string text;
    text.reserve(static_cast<size_t>(blocks.size()));
    for (std::string_view block = blocks.next(); !block.empty(); block = blocks.next()) {
        text.append(block);
        if (static_cast<int64_t>(text.size()) > kImportDocumentLimit)
            fail(path, ": document is over the ", kImportDocumentLimit >> 20,
                 " MiB document limit");
    }
    const size_t bom = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
    const std::string_view body = std::string_view(text).substr(bom);
    if (isBlank(body))
        fail(path, ": file is empty", text.empty() ? "" : " (only whitespace)");
    if (const std::ptrdiff_t at = invalidUtf8At(body); at >= 0) {
        const std::string_view before = body.substr(0, static_cast<size_t>(at));
        const size_t nl = before.rfind('\n');
        const int64_t line = 1 + std::count(before.begin(), before.end(), '\n');
        const int64_t column = nl == std::string_view::npos ? at + 1 + static_cast<int64_t>(bom)
                                                            : static_cast<int64_t>(at - nl);
        fail(path, ":", line, ": not valid UTF-8 (byte ",
             hexByte(static_cast<unsigned char>(body[at])), " at column ", column,
             "); save the document as UTF-8");
    }
    const std::vector<TextChunk> chunks = chunkText(*options.tokenizer, body, options.chunk);
    for (size_t i = 0; i < chunks.size(); ++i) {
        ImportedRecord record;
        record.kind = "text";
        record.fields = json{{"text", chunks[i].text}};
        record.line = 0;
        record.byteOffset = static_cast<int64_t>(bom) + chunks[i].byteBegin;
        record.chunkIndex = static_cast<int32_t>(i);
        record.chunkOverlap = chunks[i].overlapTokens;
        sink.accept(std::move(record));
    }
    return sink.finish(ImportFormat::Documents, "the document has no text");
}

// The first byte that is not whitespace (after a byte order mark), or nullopt when there is none.
// Throws "<path>: file is empty" for a 0-byte file.
std::optional<char> firstByte(const std::string& path)
{
    BlockReader blocks(path, {}, 64 << 10);
    int64_t seen = 0;
    for (std::string_view block = blocks.next(); !block.empty(); block = blocks.next()) {
        for (size_t i = 0; i < block.size(); ++i, ++seen) {
            if (seen < 3 && block[i] == "\xEF\xBB\xBF"[seen])
                continue;
            if (!isSpace(block[i]))
                return block[i];
        }
    }
    if (seen == 0)
        fail(path, ": file is empty");
    return std::nullopt;
}

}  // namespace

const char* importFormatName(ImportFormat format)
{
    switch (format) {
    case ImportFormat::Auto:
        return "auto";
    case ImportFormat::Alpaca:
        return "alpaca";
    case ImportFormat::Chat:
        return "chat";
    case ImportFormat::ShareGpt:
        return "sharegpt";
    case ImportFormat::PromptCompletion:
        return "prompt-completion";
    case ImportFormat::Text:
        return "text";
    case ImportFormat::Csv:
        return "csv";
    case ImportFormat::Documents:
        return "documents";
    }
    return "auto";
}

std::optional<ImportFormat> parseImportFormat(const std::string& name)
{
    for (ImportFormat f : kFormats)
        if (name == importFormatName(f))
            return f;
    return std::nullopt;
}

ImportSummary importFile(const std::string& path, const ImportOptions& options,
                         const std::function<void(ImportedRecord&&)>& onRecord,
                         const std::function<bool(int64_t, int64_t)>& progress)
{
    const std::string ext = lowerExtension(path);
    ImportFormat format = options.format;
    if (format == ImportFormat::Auto) {
        if (ext == ".csv" || ext == ".tsv")
            format = ImportFormat::Csv;
        else if (ext == ".txt" || ext == ".md" || ext == ".markdown")
            format = ImportFormat::Documents;
    }
    Sink sink(path, onRecord);
    if (format == ImportFormat::Documents) {
        BlockReader blocks(path, progress);
        if (blocks.size() == 0)
            fail(path, ": file is empty");
        return importDocument(blocks, options, sink);
    }

    const std::optional<char> first = firstByte(path);
    if (!first)
        fail(path, ": file is empty (only whitespace)");
    BlockReader blocks(path, progress);
    if (format == ImportFormat::Csv) {
        const char delimiter = options.delimiter ? options.delimiter : ext == ".tsv" ? '\t' : ',';
        if (delimiter == '"' || delimiter == '\n' || delimiter == '\r')
            fail(path, ": the CSV delimiter cannot be a quote or a line break");
        return importCsv(blocks, options, delimiter, sink);
    }
    const bool lines = ext == ".jsonl" || ext == ".ndjson";
    if (lines && *first == '[')
        fail(path, ": the file is a JSON array, not JSONL (one object per line); rename it to "
                   ".json to import "
                   "the array, or convert it (jq -c '.[]' in.json > out.jsonl)");
    if (!lines && ext != ".json" && format == ImportFormat::Auto && *first != '{' && *first != '[')
        fail(path, ": cannot tell the format of a \"", ext,
             "\" file; choose one of alpaca, chat, "
             "sharegpt, prompt-completion, text (JSON rows), csv or documents");
    if (*first == '[' && !lines)
        return importJsonArray(blocks, format, sink);
    return importJsonLines(blocks, format, sink);
}

}  // namespace tb
