// Block-wise file reading and line splitting with a per-line size limit, for the importers.
#include "data/ingest/line_reader.h"

#include "util/error.h"
#include "util/file_util.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace tb {

BlockReader::BlockReader(const std::string& path, ImportProgress progress, size_t blockBytes)
    : m_path(path), m_progress(std::move(progress)), m_buffer(blockBytes)
{
    if (isDirectory(path))
        fail(path, ": is a directory, not a file");
    // A pipe (`<(cat f)`, /dev/stdin) or a device reads once: an import reads its file more than
    // once (the format from the first bytes, the rows, the SHA-256 beside them), and the later
    // readers would get what the first left, silently.
    std::error_code kind;
    const auto status = std::filesystem::status(path, kind);
    if (!kind && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
        fail(path,
             ": not a regular file (a pipe or a device), which can be read only once; save it to "
             "a file first");
    m_in.open(path, std::ios::binary);
    if (!m_in)
        fail(path, ": cannot open (", std::strerror(errno), ")");
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    m_size = ec ? 0 : static_cast<int64_t>(size);
}

std::string_view BlockReader::next()
{
    if (!m_in)
        return {};
    m_in.read(m_buffer.data(), static_cast<std::streamsize>(m_buffer.size()));
    const auto got = static_cast<size_t>(m_in.gcount());
    if (m_in.bad())
        fail(m_path, ": read error after ", m_done, " bytes");
    m_done += static_cast<int64_t>(got);
    if (m_progress && !m_progress(m_done, std::max(m_size, m_done)))
        fail(m_path, ": import cancelled");
    return {m_buffer.data(), got};
}

bool LineReader::next(Line& line)
{
    m_carry.clear();
    line = Line{};
    line.offset = m_offset;
    bool any = false;  // bytes (or the '\n') of this line seen
    while (true) {
        if (m_pos >= m_block.size()) {
            if (!m_eof) {
                m_block = m_blocks.next();
                m_pos = 0;
                m_eof = m_block.empty();
            }
            if (m_eof) {
                if (!any)
                    return false;
                break;  // the last line has no '\n'
            }
        }
        const size_t nl = m_block.find('\n', m_pos);
        const size_t end = nl == std::string_view::npos ? m_block.size() : nl;
        const std::string_view piece = m_block.substr(m_pos, end - m_pos);
        any = true;
        line.length += static_cast<int64_t>(piece.size());
        m_offset += static_cast<int64_t>(piece.size());
        m_pos = end;
        if (!line.oversize && line.length > m_limit) {
            line.oversize = true;
            std::string().swap(m_carry);  // give the memory back: the line is skipped
        }
        if (nl != std::string_view::npos) {
            ++m_pos;
            ++m_offset;
            if (!line.oversize)
                line.text =
                    m_carry.empty() ? piece : (m_carry.append(piece), std::string_view(m_carry));
            break;
        }
        if (!line.oversize)
            m_carry.append(piece);
    }
    if (!line.oversize && m_eof)
        line.text = m_carry;
    line.number = ++m_number;
    return true;
}

std::string megabytes(int64_t bytes)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
    return text;
}

}  // namespace tb
