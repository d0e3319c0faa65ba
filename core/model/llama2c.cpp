// llama2.c checkpoint + tokenizer -> Hugging Face Llama folder (config, safetensors, sentencepiece
// model).
#include "model/llama2c.h"

#include "model/safetensors.h"
#include "tokenizer/sentencepiece_writer.h"
#include "util/error.h"
#include "util/file_util.h"
#include "util/staged_folder.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>

namespace tb {
namespace {

// Sequential reader over a byte buffer that names the file and what it was reading when it runs
// out.
class Cursor {
public:
    Cursor(const std::string& bytes, const std::string& path) : m_bytes(bytes), m_path(path) {}

    int32_t int32(const char* what)
    {
        int32_t v;
        std::memcpy(&v, need(4, what), 4);
        return v;
    }
    float float32(const char* what)
    {
        float v;
        std::memcpy(&v, need(4, what), 4);
        return v;
    }
    // `count` float32 values as raw bytes.
    std::string floats(size_t count, const std::string& what)
    {
        return std::string(need(count * 4, what.c_str()), count * 4);
    }
    std::string bytes(size_t count, const char* what)
    {
        return std::string(need(count, what), count);
    }
    void skip(size_t count, const char* what) { need(count, what); }
    size_t remaining() const { return m_bytes.size() - m_pos; }
    size_t position() const { return m_pos; }

private:
    const char* need(size_t count, const char* what)
    {
        if (count > m_bytes.size() - m_pos)
            fail(m_path, ": truncated at byte ", m_pos, " while reading ", what, " (", count,
                 " bytes needed, ", m_bytes.size() - m_pos, " left)");
        const char* p = m_bytes.data() + m_pos;
        m_pos += count;
        return p;
    }
    const std::string& m_bytes;
    const std::string& m_path;
    size_t m_pos = 0;
};

// llama2.c applies rotary embeddings to interleaved pairs (2i, 2i+1) of each head; transformers
// rotates halves (i, i + head_dim/2). Reordering the rows of Wq and Wk per head makes both compute
// the same thing.
std::string permuteRotaryRows(const std::string& w, int heads, int headDim, int cols)
{
    std::string out(w.size(), '\0');
    const size_t rowBytes = static_cast<size_t>(cols) * 4;
    for (int h = 0; h < heads; ++h)
        for (int i = 0; i < headDim / 2; ++i)
            for (int c = 0; c < 2; ++c) {
                const size_t from = static_cast<size_t>(h * headDim + 2 * i + c);
                const size_t to = static_cast<size_t>(h * headDim + c * (headDim / 2) + i);
                std::memcpy(out.data() + to * rowBytes, w.data() + from * rowBytes, rowBytes);
            }
    return out;
}

std::vector<SentencePieceEntry> readLlama2cVocab(const std::string& path, int vocabSize)
{
    const std::string bytes = readFile(path);
    Cursor in(bytes, path);
    const int32_t maxLen = in.int32("max_token_length");
    if (maxLen <= 0 || maxLen > 1024)
        fail(path, ": implausible max_token_length ", maxLen, " (not a llama2.c tokenizer?)");
    std::vector<SentencePieceEntry> pieces;
    for (int i = 0; i < vocabSize; ++i) {
        SentencePieceEntry e;
        e.score = in.float32("a token score");
        const int32_t len = in.int32("a token length");
        if (len < 0 || len > maxLen)
            fail(path, ": token ", i, " has length ", len, " (max_token_length is ", maxLen, ")");
        std::string piece = in.bytes(static_cast<size_t>(len), "token bytes");
        // The exporter wrote U+2581 as ' '; sentencepiece wants it back.
        std::string restored;
        for (char ch : piece)
            restored += (ch == ' ') ? std::string("\xE2\x96\x81") : std::string(1, ch);
        e.piece = restored;
        if (i == 0) {
            e.piece = "<unk>";
            e.type = SentencePieceEntry::Type::Unknown;
        } else if (i == 1) {
            e.piece = "<s>";
            e.type = SentencePieceEntry::Type::Control;
        } else if (i == 2) {
            e.piece = "</s>";
            e.type = SentencePieceEntry::Type::Control;
        } else if (e.piece.size() == 6 && e.piece.rfind("<0x", 0) == 0 && e.piece.back() == '>') {
            e.type = SentencePieceEntry::Type::Byte;
        }
        pieces.push_back(std::move(e));
    }
    if (in.remaining() != 0)
        fail(path, ": ", in.remaining(), " bytes left after ", vocabSize,
             " tokens: the tokenizer does not match the checkpoint's vocabulary size");
    return pieces;
}

}  // namespace

Llama2cConvertReport convertLlama2c(const std::string& checkpointPath,
                                    const std::string& tokenizerPath, const std::string& finalDir)
{
    const std::string bytes = readFile(checkpointPath);
    Cursor in(bytes, checkpointPath);
    Llama2cConvertReport r;
    r.dim = in.int32("header dim");
    r.hiddenDim = in.int32("header hidden_dim");
    r.layers = in.int32("header n_layers");
    r.heads = in.int32("header n_heads");
    r.kvHeads = in.int32("header n_kv_heads");
    int32_t vocab = in.int32("header vocab_size");
    r.seqLen = in.int32("header seq_len");
    r.sharedClassifier = vocab > 0;
    r.vocab = vocab > 0 ? vocab : -vocab;
    auto bad = [&](const char* what, long long v) {
        fail(checkpointPath, ": header field ", what, " = ", v,
             " is not plausible (not a llama2.c checkpoint?)");
    };
    if (r.dim <= 0 || r.dim > 65536)
        bad("dim", r.dim);
    if (r.hiddenDim <= 0 || r.hiddenDim > 1 << 20)
        bad("hidden_dim", r.hiddenDim);
    if (r.layers <= 0 || r.layers > 1024)
        bad("n_layers", r.layers);
    if (r.heads <= 0 || r.dim % r.heads != 0)
        bad("n_heads", r.heads);
    if (r.kvHeads <= 0 || r.heads % r.kvHeads != 0)
        bad("n_kv_heads", r.kvHeads);
    if (r.vocab <= 0 || r.vocab > 1 << 22)
        bad("vocab_size", r.vocab);
    if (r.seqLen <= 0 || r.seqLen > 1 << 22)
        bad("seq_len", r.seqLen);
    const int headDim = r.dim / r.heads;
    const int kvDim = r.kvHeads * headDim;
    const size_t L = static_cast<size_t>(r.layers);

    auto stacked = [&](const char* name, size_t perLayer) {
        std::vector<std::string> out;
        for (size_t l = 0; l < L; ++l)
            out.push_back(
                in.floats(perLayer, std::string(name) + " of layer " + std::to_string(l)));
        return out;
    };
    const std::string embed =
        in.floats(static_cast<size_t>(r.vocab) * r.dim, "token_embedding_table");
    auto rmsAtt = stacked("rms_att_weight", r.dim);
    auto wq = stacked("wq", static_cast<size_t>(r.dim) * r.dim);
    auto wk = stacked("wk", static_cast<size_t>(kvDim) * r.dim);
    auto wv = stacked("wv", static_cast<size_t>(kvDim) * r.dim);
    auto wo = stacked("wo", static_cast<size_t>(r.dim) * r.dim);
    auto rmsFfn = stacked("rms_ffn_weight", r.dim);
    auto w1 = stacked("w1", static_cast<size_t>(r.hiddenDim) * r.dim);
    auto w2 = stacked("w2", static_cast<size_t>(r.dim) * r.hiddenDim);
    auto w3 = stacked("w3", static_cast<size_t>(r.hiddenDim) * r.dim);
    const std::string rmsFinal = in.floats(r.dim, "rms_final_weight");
    // Legacy rotary tables (real and imaginary halves): recomputed by every runtime, so skipped.
    const size_t freqBytes = static_cast<size_t>(r.seqLen) * headDim / 2 * 4 * 2;
    const size_t clsBytes = r.sharedClassifier ? 0 : static_cast<size_t>(r.vocab) * r.dim * 4;
    std::string cls;
    if (in.remaining() == freqBytes + clsBytes) {
        in.skip(freqBytes, "freq_cis tables");
    } else if (in.remaining() != clsBytes) {
        fail(checkpointPath, ": ", in.remaining(), " bytes follow the final norm; expected ",
             clsBytes, " or ", freqBytes + clsBytes, " (truncated or not matching its header)");
    }
    if (!r.sharedClassifier)
        cls = in.floats(static_cast<size_t>(r.vocab) * r.dim, "wcls");

    auto pieces = readLlama2cVocab(tokenizerPath, r.vocab);

    std::vector<TensorBlob> tensors;
    auto add = [&](const std::string& name, std::vector<int64_t> shape, std::string data) {
        tensors.push_back(TensorBlob{name, DType::F32, std::move(shape), std::move(data)});
    };
    const int64_t d = r.dim, hd = r.hiddenDim, kv = kvDim;
    add("model.embed_tokens.weight", {r.vocab, d}, embed);
    for (size_t l = 0; l < L; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        add(p + "input_layernorm.weight", {d}, rmsAtt[l]);
        add(p + "self_attn.q_proj.weight", {d, d},
            permuteRotaryRows(wq[l], r.heads, headDim, r.dim));
        add(p + "self_attn.k_proj.weight", {kv, d},
            permuteRotaryRows(wk[l], r.kvHeads, headDim, r.dim));
        add(p + "self_attn.v_proj.weight", {kv, d}, wv[l]);
        add(p + "self_attn.o_proj.weight", {d, d}, wo[l]);
        add(p + "post_attention_layernorm.weight", {d}, rmsFfn[l]);
        add(p + "mlp.gate_proj.weight", {hd, d}, w1[l]);
        add(p + "mlp.down_proj.weight", {d, hd}, w2[l]);
        add(p + "mlp.up_proj.weight", {hd, d}, w3[l]);
    }
    add("model.norm.weight", {d}, rmsFinal);
    if (!r.sharedClassifier)
        add("lm_head.weight", {r.vocab, d}, cls);
    for (const auto& t : tensors)
        r.parameters += static_cast<long long>(t.bytes.size() / 4);

    // Written whole into a staging folder and swapped in at the end: a kill leaves the previous
    // folder or the new one, never new weights beside an old config.
    const std::vector<std::string> files{"model.safetensors", "config.json", "tokenizer.model",
                                         "tokenizer_config.json", "generation_config.json"};
    checkReplaceableFolder(
        finalDir,
        [&](const std::string& name) {
            return std::find(files.begin(), files.end(), name) != files.end();
        },
        "llama2.c conversion");
    StagedFolder staged(finalDir);
    const std::string& outDir = staged.path();

    writeSafetensors(joinPath(outDir, "model.safetensors"), tensors, {{"format", "pt"}});

    nlohmann::ordered_json config = {
        {"architectures", {"LlamaForCausalLM"}},
        {"model_type", "llama"},
        {"hidden_size", r.dim},
        {"intermediate_size", r.hiddenDim},
        {"num_hidden_layers", r.layers},
        {"num_attention_heads", r.heads},
        {"num_key_value_heads", r.kvHeads},
        {"head_dim", headDim},
        {"vocab_size", r.vocab},
        {"max_position_embeddings", r.seqLen},
        {"rms_norm_eps", 1e-5},
        {"rope_theta", 10000.0},
        {"hidden_act", "silu"},
        {"attention_bias", false},
        {"mlp_bias", false},
        {"tie_word_embeddings", r.sharedClassifier},
        {"bos_token_id", 1},
        {"eos_token_id", 2},
        {"torch_dtype", "float32"},
    };
    writeFileAtomic(joinPath(outDir, "config.json"), config.dump(2) + "\n");

    SentencePieceSpec spec;
    writeFileAtomic(joinPath(outDir, "tokenizer.model"), serializeSentencePieceModel(pieces, spec));

    nlohmann::ordered_json tokConfig = {
        {"tokenizer_class", "LlamaTokenizer"},
        {"add_bos_token", true},
        {"add_eos_token", false},
        {"bos_token", "<s>"},
        {"eos_token", "</s>"},
        {"unk_token", "<unk>"},
        {"model_max_length", r.seqLen},
        {"legacy", true},
        {"clean_up_tokenization_spaces", false},
    };
    writeFileAtomic(joinPath(outDir, "tokenizer_config.json"), tokConfig.dump(2) + "\n");

    nlohmann::ordered_json genConfig = {
        {"bos_token_id", 1}, {"eos_token_id", 2}, {"max_length", r.seqLen}};
    writeFileAtomic(joinPath(outDir, "generation_config.json"), genConfig.dump(2) + "\n");
    staged.commit();
    return r;
}

}  // namespace tb
