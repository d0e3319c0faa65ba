// Splits a long document into overlapping chunks of at most N tokens of a model's tokenizer,
// cutting at paragraph, then sentence, then word boundaries, with byte ranges that map back into
// the source.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tb {

class Tokenizer;

struct ChunkOptions {
    int maxTokens = 256;     // tokens per chunk (encode(text, false)), at least 8
    int overlapTokens = 32;  // tokens repeated from the previous chunk's end, < maxTokens / 2
};

struct TextChunk {
    std::string text;       // == source.substr(byteBegin, byteEnd - byteBegin)
    int64_t byteBegin = 0;  // bytes into the source text
    int64_t byteEnd = 0;
    int32_t tokens = 0;  // encode(text, false).size(), <= maxTokens
    // tokens of the text shared with the previous chunk (0 for the first)
    int32_t overlapTokens = 0;
};

// Throws tb::Error naming the option when maxTokens < 8 (or absurdly large) or overlapTokens is not
// in [0, maxTokens / 2).
void validateChunkOptions(const ChunkOptions& options);

// Chunks `text` in order. Each chunk starts at a non-space byte and ends at a non-space byte;
// together the chunks cover every non-space byte of the text. A chunk ends at the last paragraph
// break (blank line) that leaves it at least half full, else the last sentence end (. ! ? followed
// by whitespace, closing quotes and brackets allowed in between), else the last whitespace, else a
// hard cut inside a word (never inside a UTF-8 character). The next chunk starts about
// overlapTokens tokens before the end of the previous one (by summed sentence and word counts), at
// a sentence start when that keeps at least half of the overlap, else at a word start. Text that is
// empty or only whitespace gives no chunks.
std::vector<TextChunk> chunkText(const Tokenizer& tokenizer, std::string_view text,
                                 const ChunkOptions& options);

}  // namespace tb
