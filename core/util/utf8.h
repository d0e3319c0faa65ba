// UTF-8 checks shared by importers and the chunker: where a byte string stops being valid UTF-8,
// and where a character starts (so text is never cut inside one).
#pragma once

#include <cstddef>
#include <string_view>

namespace tb {

// Byte offset of the first invalid UTF-8 sequence in s, or -1 when s is valid UTF-8 (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF). A sequence cut off by the end of s is
// invalid.
std::ptrdiff_t invalidUtf8At(std::string_view s);

// True when byte c starts a character (it is not a 10xxxxxx continuation byte).
inline bool isUtf8Lead(char c)
{
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
}

// The largest offset <= at that does not fall inside a character of s (at is clamped to s.size()).
size_t utf8Floor(std::string_view s, size_t at);

}  // namespace tb
