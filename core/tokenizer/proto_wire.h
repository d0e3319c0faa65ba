// Reading protobuf wire format without protobuf: the fields of one serialized message, for the few
// sentencepiece ModelProto fields Tunebench reads (piece types, trainer and normalizer options).
#pragma once

#include <cstdint>
#include <string_view>

namespace tb::protowire {

// One field of a message: its number, wire type (0 varint, 1 fixed64, 2 length-delimited,
// 5 fixed32), the value of a varint or fixed field, and the bytes of a length-delimited one.
struct Field {
    uint32_t number = 0;
    uint32_t wire = 0;
    uint64_t value = 0;
    std::string_view bytes;
};

inline bool readVarint(std::string_view b, size_t& p, uint64_t& v)
{
    v = 0;
    for (int shift = 0; p < b.size() && shift < 64; shift += 7) {
        const auto byte = static_cast<uint8_t>(b[p++]);
        v |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return true;
    }
    return false;
}

// Calls fn(const Field&) for every field of `message` in order; false when the bytes do not parse
// (fields before the damage have been visited).
template <class Fn> bool forEachField(std::string_view message, Fn&& fn)
{
    size_t p = 0;
    while (p < message.size()) {
        uint64_t key = 0;
        if (!readVarint(message, p, key))
            return false;
        Field f;
        f.number = static_cast<uint32_t>(key >> 3);
        f.wire = static_cast<uint32_t>(key & 7);
        switch (f.wire) {
        case 0:
            if (!readVarint(message, p, f.value))
                return false;
            break;
        case 1:
        case 5: {
            const size_t n = f.wire == 1 ? 8 : 4;
            if (n > message.size() - p)
                return false;
            for (size_t i = 0; i < n; ++i)
                f.value |= static_cast<uint64_t>(static_cast<uint8_t>(message[p + i])) << (8 * i);
            p += n;
            break;
        }
        case 2: {
            uint64_t len = 0;
            if (!readVarint(message, p, len) || len > message.size() - p)
                return false;
            f.bytes = message.substr(p, len);
            p += len;
            break;
        }
        default:
            return false;
        }
        fn(f);
    }
    return true;
}

}  // namespace tb::protowire
