// Reads a file in fixed-size blocks and splits it into lines in bounded memory: a line longer than
// the limit is measured and skipped, never held whole; reports progress and honours cancellation.
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tb {

// progress(bytesDone, bytesTotal) after each block; returning false cancels (tb::Error "<path>:
// import cancelled").
using ImportProgress = std::function<bool(int64_t bytesDone, int64_t bytesTotal)>;

class BlockReader {
public:
    // Throws tb::Error naming the path when it is a directory or cannot be opened.
    BlockReader(const std::string& path, ImportProgress progress, size_t blockBytes = 1 << 20);

    // The next block; empty at the end of the file. Valid until the next call.
    std::string_view next();
    int64_t size() const { return m_size; }  // bytes
    int64_t done() const { return m_done; }  // bytes handed out so far
    const std::string& path() const { return m_path; }

private:
    std::string m_path;
    ImportProgress m_progress;
    std::ifstream m_in;
    std::vector<char> m_buffer;
    int64_t m_size = 0;
    int64_t m_done = 0;
};

struct Line {
    std::string_view text;  // without the '\n' (a '\r' before it is kept); empty when oversize
    int64_t number = 0;     // 1-based
    int64_t offset = 0;     // bytes into the file
    int64_t length = 0;     // bytes, without the '\n'
    bool oversize = false;  // longer than the limit: text is not kept
};

class LineReader {
public:
    LineReader(BlockReader& blocks, int64_t limitBytes) : m_blocks(blocks), m_limit(limitBytes) {}

    // The next line (valid until the next call), or false at the end of the file. A final line
    // without
    // '\n' counts; a file ending in '\n' has no empty line after it.
    bool next(Line& line);

private:
    BlockReader& m_blocks;
    int64_t m_limit;
    std::string_view m_block;
    size_t m_pos = 0;
    std::string m_carry;  // a line that spans blocks
    int64_t m_offset = 0;
    int64_t m_number = 0;
    bool m_eof = false;
};

// "50.0 MB": bytes in decimal megabytes with one decimal, for messages.
std::string megabytes(int64_t bytes);

}  // namespace tb
