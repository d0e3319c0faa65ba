// Quantised weights written out: each tensor's pieces, compared with bitsandbytes'.
#include "export/quant_export.h"

#include "model/causal_lm.h"
#include "quant/quantize.h"
#include "util/error.h"

#include <vector>

namespace tb {

namespace {

// Raw bytes of a CPU tensor of any dtype.
TensorBlob rawBlob(const std::string& name, const torch::Tensor& t, DType dtype)
{
    const torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
    TensorBlob b{name, dtype, c.sizes().vec(), std::string()};
    b.bytes.assign(static_cast<const char*>(c.data_ptr()),
                   static_cast<size_t>(c.numel()) * c.element_size());
    return b;
}

}  // namespace

int64_t quantizeTensorFile(const std::string& in, const QuantOptions& options,
                           const std::string& out)
{
    if (!options.enabled())
        fail("quantizeTensorFile: quant is none (use nf4, fp4 or int8)");
    const auto file = SafetensorsFile::open(in);
    std::vector<TensorBlob> blobs;
    int64_t count = 0;
    for (const TensorInfo& info : file->header().tensors) {
        if (info.shape.size() != 2 ||
            (info.dtype != DType::F32 && info.dtype != DType::F16 && info.dtype != DType::BF16))
            continue;
        const torch::Tensor w = tensorView(*file, info);
        const QuantizedWeight q = quantizeWeight(w, options);
        const std::string& n = info.name;
        blobs.push_back(
            rawBlob(n + ".data", q.data, q.kind == QuantKind::Int8 ? DType::I8 : DType::U8));
        blobs.push_back(rawBlob(n + ".absmax", q.absmax, q.doubleQuant ? DType::U8 : DType::F32));
        if (q.doubleQuant) {
            blobs.push_back(rawBlob(n + ".absmax2", q.absmax2, DType::F32));
            blobs.push_back(rawBlob(n + ".code2", q.code2, DType::F32));
            blobs.push_back(rawBlob(n + ".offset", torch::tensor({q.offset}), DType::F32));
        }
        blobs.push_back(rawBlob(n + ".dequant", dequantizeWeight(q, torch::kFloat32), DType::F32));
        blobs.push_back(
            rawBlob(n + ".dequant_bf16", dequantizeWeight(q, torch::kBFloat16), DType::BF16));
        ++count;
    }
    writeSafetensors(out, blobs,
                     {{"quant", quantKindName(options.kind)},
                      {"double_quant", options.doubleQuant ? "true" : "false"}});
    return count;
}

}  // namespace tb
