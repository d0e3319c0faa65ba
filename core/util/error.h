// tb::Error, the one exception type core throws: a message that names the file, key or tensor at
// fault.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace tb {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Builds a message from pieces: tb::fail("file ", path, ": tensor ", name, " missing").
template <typename... Parts> [[noreturn]] void fail(Parts&&... parts)
{
    std::ostringstream out;
    (out << ... << std::forward<Parts>(parts));
    throw Error(out.str());
}

template <typename... Parts> std::string cat(Parts&&... parts)
{
    std::ostringstream out;
    (out << ... << std::forward<Parts>(parts));
    return out.str();
}

}  // namespace tb
