// The Model page: opens a model folder on a worker thread and shows its architecture and size.
#pragma once

#include "model/config.h"
#include "tokenizer/chat_template.h"

#include <string>
#include <vector>

#include <QFutureWatcher>
#include <QStringList>
#include <QWidget>

#include <optional>

class QLabel;
class QLineEdit;
class QMenu;
class QPushButton;
class QStandardItemModel;
class QTreeView;

namespace tb {

struct ModelSummary {
    QString path;
    QString error;  // empty when loading succeeded
    QString architecture;
    qint64 parameters = 0;
    qint64 layers = 0, hiddenSize = 0, vocabSize = 0, context = 0, heads = 0, kvHeads = 0;
    QString dtype;
    QString tokenizer;  // "sentencepiece" / "bpe"; empty without one
    // What the folder lacks beside config.json: "tokenizer", "weights". A config alone (a folder
    // holding only config.json, or the file itself) opens: the pages that plan need nothing more.
    QStringList missing;
    bool tensorsFromConfig = false;  // no weights: the tensors below come from config.json
    std::optional<ModelConfig> config;
    // The folder's own chat template: whether it has one, where it came from, and why it cannot be
    // used when it does not parse (shown on the page, not found at step 500).
    bool ownChatTemplate = false;
    QString chatTemplateOrigin;
    QString chatTemplateError;
    std::vector<std::string> stopTokens;  // the template's end-of-turn tokens
    struct Tensor {
        QString name, dtype;
        QVector<qint64> shape;
    };
    // The checkpoint's tensors: names and shapes from the safetensors headers, or computed from
    // config.json (model/config_tree.h) when there are no weights.
    QVector<Tensor> tensors;
};

// Reads config.json and, when the folder has them, the tokenizer and the weights' headers (runs
// on a worker thread). `path`: a model folder, its config.json (opens the folder) or another
// config file.
ModelSummary summarizeModel(const QString& path);

class StudioState;

class ModelPage : public QWidget {
    Q_OBJECT
public:
    explicit ModelPage(StudioState* state = nullptr, QWidget* parent = nullptr);
    QTreeView* tensorTree() const { return m_tensorView; }
    QStandardItemModel* tensorModel() const { return m_tensors; }
    QStandardItemModel* infoModel() const { return m_info; }
    void openModel(const QString& path);
    // The Open button's menu: a model folder, a config.json, or a model from the catalog.
    QMenu* openMenu() const { return m_openMenu; }
    const ModelSummary& summary() const { return m_summary; }
    // What opening the model reset (StudioState::modelNote), shown until the next model opens.
    QLabel* noteLabel() const { return m_note; }

Q_SIGNALS:
    void modelOpened(const tb::ModelSummary& summary);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void showSummary(const ModelSummary& s);
    QLineEdit* m_path = nullptr;
    QPushButton* m_browse = nullptr;
    QMenu* m_openMenu = nullptr;
    QStandardItemModel* m_info = nullptr;  // property -> value
    QStandardItemModel* m_tensors =
        nullptr;  // module tree: name, shape, parameters, role under the method
    QTreeView* m_infoView = nullptr;
    QTreeView* m_tensorView = nullptr;
    StudioState* m_state = nullptr;
    void showTensors();
    QLabel* m_status = nullptr;
    QLabel* m_note = nullptr;
    QFutureWatcher<ModelSummary> m_watcher;
    ModelSummary m_summary;
};

}  // namespace tb
