// Byte-level BPE tokenizer from a Hugging Face tokenizer.json (implementation pending).
#include "tokenizer/tokenizer.h"
#include "util/error.h"
namespace tb {
std::unique_ptr<Tokenizer> loadBpeTokenizer(const std::string& tokenizerJson)
{
    fail(tokenizerJson, ": byte-level BPE tokenizers are not implemented yet");
}
} // namespace tb
