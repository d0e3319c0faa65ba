// `tunebench convert`: a llama2.c checkpoint to a Hugging Face folder, a Hugging Face folder to
// GGUF.
#include "cli/commands.h"

#include "export/export.h"
#include "model/llama2c.h"
#include "util/error.h"
#include <nlohmann/json.hpp>

namespace tb {

using nlohmann::json;

int cmdConvert(const Args& args, std::ostream& out, std::ostream& err)
{
    if (args.positional().size() >= 2 && args.positional()[1] == "gguf") {
        args.allowOnly({"model", "out", "dtype", "json"});
        ExportOptions o;
        o.outDir = args.value("out");
        if (args.has("dtype"))
            o.dtype = args.value("dtype");
        const ExportReport r = exportModelGguf(args.value("model"), o);
        if (args.flag("json")) {
            out << json{{"out", r.outDir},
                        {"dtype", o.dtype},
                        {"tensors", r.tensors},
                        {"bytes", r.bytes},
                        {"warnings", r.warnings}}
                       .dump()
                << "\n";
            return 0;
        }
        for (const std::string& w : r.warnings)
            err << "note: " << w << "\n";
        out << "wrote " << r.outDir << " from " << r.checkpoint << " (" << r.tensors << " tensors, "
            << o.dtype << ", " << r.bytes << " bytes)\n";
        return 0;
    }
    args.allowOnly({"checkpoint", "tokenizer", "out", "json"});
    if (args.positional().size() < 2 || args.positional()[1] != "llama2c")
        fail("convert: unknown source format (supported: convert llama2c --checkpoint F "
             "--tokenizer F --out DIR; "
             "convert gguf --model DIR --out FILE.gguf)");
    auto r = convertLlama2c(args.value("checkpoint"), args.value("tokenizer"), args.value("out"));
    if (args.flag("json")) {
        out << json{{"out", args.value("out")},
                    {"parameters", r.parameters},
                    {"layers", r.layers},
                    {"hidden_size", r.dim},
                    {"vocab_size", r.vocab}}
                   .dump()
            << "\n";
    } else {
        out << "wrote " << args.value("out") << ": llama, " << r.layers << " layers, dim " << r.dim
            << ", vocab " << r.vocab << ", " << r.parameters << " parameters\n";
    }
    return 0;
}

}  // namespace tb
