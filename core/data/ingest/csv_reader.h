// RFC 4180 CSV/TSV records from a stream of lines: quoted fields with doubled quotes and line
// breaks inside, each record tagged with the physical line it starts on.
#pragma once

#include "data/ingest/line_reader.h"

#include <string>
#include <vector>

namespace tb {

struct CsvRecord {
    std::vector<std::string> fields;
    int64_t line = 0;    // 1-based physical line where the record starts
    int64_t offset = 0;  // bytes into the file
    // Why the record is unusable ("" when fine); its fields are then incomplete.
    std::string problem;
};

class CsvReader {
public:
    // delimiter: ',' or '\t' (any single byte other than '"', '\r', '\n').
    CsvReader(LineReader& lines, char delimiter, int64_t limitBytes)
        : m_lines(lines), m_delimiter(delimiter), m_limit(limitBytes)
    {
    }

    // The next record, skipping blank lines between records; false at the end of the file. A record
    // that is not valid UTF-8, has text after a closing quote, is over the size limit, or whose
    // quote is never closed comes back with `problem` set. A UTF-8 byte order mark at the start is
    // skipped.
    bool next(CsvRecord& record);

private:
    LineReader& m_lines;
    char m_delimiter;
    int64_t m_limit;
};

}  // namespace tb
