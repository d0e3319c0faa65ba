// readExampleFile: a dataset file through the importer, each valid row rendered as an Example.
#include "data/ingest/example_file.h"

#include "data/ingest/import.h"
#include "data/record.h"
#include "util/error.h"
#include "util/file_util.h"

namespace tb {

ExampleFile readExampleFile(const std::string& path, ExampleFormat format)
{
    // One parser for every dataset file: the importer (data/import.h) validates and normalises
    // rows, recordToExample renders them. A file with no valid row throws its first rejection.
    ImportOptions options;
    switch (format) {
    case ExampleFormat::Auto:
        options.format = ImportFormat::Auto;
        break;
    case ExampleFormat::Alpaca:
        options.format = ImportFormat::Alpaca;
        break;
    case ExampleFormat::Messages:
        options.format = ImportFormat::Chat;
        break;
    case ExampleFormat::PromptCompletion:
        options.format = ImportFormat::PromptCompletion;
        break;
    case ExampleFormat::Text:
        options.format = ImportFormat::Text;
        break;
    }
    ExampleFile file;
    const ImportSummary summary = importFile(path, options, [&](ImportedRecord&& r) {
        Example ex = recordToExample(r.kind, r.fields);
        ex.source = cat(path, ":", r.line);
        file.examples.push_back(std::move(ex));
    });
    for (const ImportRejection& r : summary.rejected)
        file.rejected.push_back({cat(path, ":", r.line), r.reason});
    switch (summary.format) {
    case ImportFormat::Alpaca:
        file.format = ExampleFormat::Alpaca;
        break;
    case ImportFormat::Chat:
    case ImportFormat::ShareGpt:
        file.format = ExampleFormat::Messages;
        break;
    case ImportFormat::PromptCompletion:
        file.format = ExampleFormat::PromptCompletion;
        break;
    case ImportFormat::Text:
        file.format = ExampleFormat::Text;
        break;
    default:
        file.format = format;
        break;  // CSV: whichever kind its columns gave
    }
    return file;
}

}  // namespace tb
