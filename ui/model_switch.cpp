// The architecture-dependent options of a run config, reset for a newly opened model and listed.
#include "model_switch.h"

#include "peft/defaults.h"

#include <QObject>
#include <QStringList>

namespace tb {

namespace {

QString joined(const std::vector<std::string>& names, const QString& none)
{
    QStringList out;
    for (const std::string& n : names)
        out << QString::fromStdString(n);
    return out.isEmpty() ? none : out.join(QStringLiteral(", "));
}

QString templateText(std::optional<ChatTemplateFamily> family)
{
    if (family)
        return QString::fromLatin1(chatTemplateName(*family));
    return QObject::tr("model's own");
}

QString sizeText(int size)
{
    return size > 0 ? QString::number(size) : QObject::tr("auto");
}

}  // namespace

std::vector<ConfigReset> resetForModel(TrainConfig& config, const ModelConfig& model,
                                       bool ownTemplate, std::optional<ChatTemplateFamily> fallback)
{
    std::vector<ConfigReset> resets;
    auto note = [&resets](bool changed, const QString& option, const QString& before,
                          const QString& after) {
        if (changed)
            resets.push_back({option, before, after});
    };
    const std::vector<std::string> targets = defaultLoraTargets(model.architecture);
    note(config.lora.targets != targets, QObject::tr("LoRA targets"),
         joined(config.lora.targets, QObject::tr("PEFT's default")), joined(targets, QString()));
    config.lora.targets = targets;

    const PartialOptions partial;
    note(config.partial.trainableBlocks != partial.trainableBlocks,
         QObject::tr("partial trainable blocks"), QString::number(config.partial.trainableBlocks),
         QString::number(partial.trainableBlocks));
    note(config.partial.modules != partial.modules, QObject::tr("partial also trains"),
         joined(config.partial.modules, QObject::tr("nothing")),
         joined(partial.modules, QObject::tr("nothing")));
    config.partial = partial;

    const AdapterOptions adapter;
    note(config.adapter.kind != adapter.kind, QObject::tr("adapter placement"),
         QLatin1String(adapterKindName(config.adapter.kind)),
         QLatin1String(adapterKindName(adapter.kind)));
    note(config.adapter.size != adapter.size, QObject::tr("adapter bottleneck size"),
         sizeText(config.adapter.size), sizeText(adapter.size));
    config.adapter.kind = adapter.kind;
    config.adapter.size = adapter.size;

    const std::optional<ChatTemplateFamily> chat = ownTemplate ? std::nullopt : fallback;
    note(config.data.chatTemplate != chat, QObject::tr("chat template"),
         templateText(config.data.chatTemplate), templateText(chat));
    config.data.chatTemplate = chat;

    // Prompt tuning's virtual tokens take their places in the context before the text.
    const int64_t context = model.maxPositions;
    const int64_t virtualTokens = config.method == Method::Prompt ? config.prompt.numTokens : 0;
    const int64_t room = context - virtualTokens;
    const bool tooLong = context > 0 && room > 0 && config.data.maxLength > room;
    note(tooLong, QObject::tr("max length"), QString::number(config.data.maxLength),
         virtualTokens > 0 ? QObject::tr("%1 (its context of %2 less %3 virtual tokens)")
                                 .arg(room)
                                 .arg(context)
                                 .arg(virtualTokens)
                           : QObject::tr("%1 (its context)").arg(context));
    if (tooLong)
        config.data.maxLength = static_cast<int>(room);
    return resets;
}

QString architectureTitle(Architecture arch)
{
    switch (arch) {
    case Architecture::Llama:
        return QStringLiteral("Llama");
    case Architecture::Mistral:
        return QStringLiteral("Mistral");
    case Architecture::Qwen2:
        return QStringLiteral("Qwen2");
    case Architecture::Qwen3:
        return QStringLiteral("Qwen3");
    case Architecture::Gemma3:
        return QStringLiteral("Gemma 3");
    case Architecture::SmolLM3:
        return QStringLiteral("SmolLM3");
    case Architecture::Phi3:
        return QStringLiteral("Phi-3");
    case Architecture::Gpt2:
        return QStringLiteral("GPT-2");
    }
    return QString::fromLatin1(architectureName(arch));
}

QString modelSwitchNote(const QString& modelName, const ModelConfig& model,
                        const std::vector<ConfigReset>& resets)
{
    QStringList changes;
    for (const ConfigReset& r : resets)
        changes << QObject::tr("%1 %2 → %3").arg(r.option, r.before, r.after);
    const QString opened =
        QObject::tr("Opened %1 (%2)").arg(modelName, architectureTitle(model.architecture));
    if (changes.isEmpty())
        return QObject::tr("%1: every option already fits it, nothing reset").arg(opened);
    return QObject::tr("%1: %2").arg(opened, changes.join(QStringLiteral("; ")));
}

}  // namespace tb
