// Memory components, method labels and device presets shared by the Memory page's charts.
#include "memory_items.h"

#include <QCoreApplication>
#include <QObject>

#include <unistd.h>

namespace tb {

namespace {

const char* const kKeys[kComponentCount] = {"weights",        "gradients",   "optimizer_states",
                                            "master_weights", "activations", "logits",
                                            "overhead",       "other"};
const char* const kTitles[kComponentCount] = {
    QT_TRANSLATE_NOOP("tb::MemoryPage", "Weights"),
    QT_TRANSLATE_NOOP("tb::MemoryPage", "Gradients"),
    QT_TRANSLATE_NOOP("tb::MemoryPage", "Optimizer states"),
    QT_TRANSLATE_NOOP("tb::MemoryPage", "Master weights"),
    QT_TRANSLATE_NOOP("tb::MemoryPage", "Activations"),
    QT_TRANSLATE_NOOP("tb::MemoryPage", "Logits"),
    QT_TRANSLATE_NOOP("tb::MemoryPage", "Overhead"),
    QT_TRANSLATE_NOOP("tb::MemoryPage", "Objective's own")};
const QColor kColors[kComponentCount] = {QColor(0x34, 0x6d, 0xb3), QColor(0xe0, 0x7b, 0x39),
                                         QColor(0x5a, 0xa4, 0x69), QColor(0x8c, 0x6b, 0xb1),
                                         QColor(0xd1, 0x4f, 0x5a), QColor(0xc9, 0xa2, 0x27),
                                         QColor(0x8c, 0x8c, 0x8c), QColor(0x16, 0xa0, 0x85)};

}  // namespace

const char* componentKey(int component)
{
    return kKeys[component];
}

QString componentTitle(int component)
{
    return QCoreApplication::translate("tb::MemoryPage", kTitles[component]);
}

QColor componentColor(int component)
{
    return kColors[component];
}

std::vector<double> componentBytes(const MemoryEstimate& e)
{
    std::vector<double> values(kComponentCount, 0.0);
    for (const MemoryItem& item : e.items) {
        int i = 0;
        while (i < kComponentCount - 1 && item.key != kKeys[i])
            ++i;
        values[size_t(i)] += double(item.bytes);
    }
    return values;
}

QString methodLabel(Method m, const QuantOptions& quant)
{
    switch (m) {
    case Method::Full:
        return QObject::tr("Full");
    case Method::Partial:
        return QObject::tr("Partial");
    case Method::Lora:
        if (quant.enabled())
            return QObject::tr("QLoRA %1").arg(QLatin1String(quantKindName(quant.kind)));
        return QObject::tr("LoRA");
    case Method::Adapter:
        return QObject::tr("Adapter");
    case Method::Prompt:
        return QObject::tr("Prompt");
    }
    return {};
}

std::vector<std::pair<QString, qint64>> deviceMemoryPresets()
{
    std::vector<std::pair<QString, qint64>> presets;
    presets.emplace_back(QObject::tr("None"), 0);
    for (int gb : {8, 12, 16, 24, 32, 40, 48, 80, 141})
        presets.emplace_back(QStringLiteral("%1 GB").arg(gb),
                             parseByteSize(std::to_string(gb) + "GB"));
    const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && pageSize > 0)
        presets.emplace_back(
            QObject::tr("This machine (%1 RAM)")
                .arg(QString::fromStdString(formatBytes(qint64(pages) * pageSize))),
            qint64(pages) * pageSize);
    return presets;
}

}  // namespace tb
