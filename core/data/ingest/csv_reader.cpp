// CSV/TSV record assembly over physical lines (RFC 4180 quoting; a lone '"' inside an unquoted
// field is kept as text, as most spreadsheet exports expect).
#include "data/ingest/csv_reader.h"

#include "util/error.h"
#include "util/utf8.h"

#include <cstdio>

namespace tb {
namespace {

std::string hexByte(unsigned char b)
{
    char text[8];
    std::snprintf(text, sizeof text, "0x%02X", b);
    return text;
}

}  // namespace

bool CsvReader::next(CsvRecord& record)
{
    record = CsvRecord{};
    std::string field;
    bool inQuotes = false;    // inside a quoted field
    bool quoted = false;      // the current field started with a quote
    bool afterQuote = false;  // the quoted field has closed
    bool started = false;
    int64_t bytes = 0;
    auto note = [&](std::string problem) {
        if (record.problem.empty())
            record.problem = std::move(problem);
    };
    Line line;
    while (m_lines.next(line)) {
        std::string_view text = line.text;
        if (line.number == 1 && text.substr(0, 3) == "\xEF\xBB\xBF") {
            text.remove_prefix(3);
            line.offset += 3;
        }
        if (!started) {
            if (!line.oversize && (text.empty() || text == "\r"))
                continue;  // blank line between records
            started = true;
            record.line = line.number;
            record.offset = line.offset;
        }
        bytes += line.length + 1;
        if (line.oversize || bytes > m_limit) {
            // The quote state inside an unread line is unknown: the record ends with this line.
            note(cat("row is ", megabytes(bytes), ", over the ", m_limit >> 20, " MiB row limit"));
            if (line.oversize)
                return true;
        }
        if (const std::ptrdiff_t at = invalidUtf8At(text); at >= 0) {
            const int64_t column =
                at + 1 + (line.number == 1 && line.text.size() != text.size() ? 3 : 0);
            note(line.number == record.line
                     ? cat("not valid UTF-8 (byte ", hexByte(text[at]), " at column ", column, ")")
                     : cat("not valid UTF-8 (byte ", hexByte(text[at]), " at line ", line.number,
                           ", column ", column, ")"));
        }
        const bool keep = record.problem.empty();  // stop copying text once the record is rejected
        for (size_t i = 0; i < text.size(); ++i) {
            const char c = text[i];
            if (inQuotes) {
                if (c != '"') {
                    if (keep)
                        field += c;
                } else if (i + 1 < text.size() && text[i + 1] == '"') {
                    if (keep)
                        field += '"';
                    ++i;
                } else {
                    inQuotes = false;
                    afterQuote = true;
                }
            } else if (c == m_delimiter) {
                record.fields.push_back(std::move(field));
                field.clear();
                quoted = afterQuote = false;
            } else if (c == '"' && field.empty() && !quoted) {
                inQuotes = quoted = true;
            } else if (c == '\r' && i + 1 == text.size()) {
                // CRLF line end
            } else {
                if (afterQuote)
                    note(cat("text after the closing quote of column ", record.fields.size() + 1));
                if (keep)
                    field += c;
            }
        }
        if (inQuotes) {
            if (keep)
                field += '\n';  // a line break inside a quoted field is part of it
            continue;
        }
        record.fields.push_back(std::move(field));
        return true;
    }
    if (!started)
        return false;
    note("a quoted field is not closed before the end of the file");
    record.fields.push_back(std::move(field));
    return true;
}

}  // namespace tb
