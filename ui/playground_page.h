// The Playground: one prompt, the base model's and the fine-tuned model's continuations side by side,
// streamed token by token from a worker thread (Model::generate's TokenCallback), with sampling settings.
#pragma once

#include <QFutureWatcher>
#include <QWidget>

#include <atomic>
#include <memory>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;

namespace tb {

class Model;
class StudioState;

class PlaygroundPage : public QWidget {
    Q_OBJECT
public:
    explicit PlaygroundPage(StudioState* state, QWidget* parent = nullptr);
    ~PlaygroundPage() override;  // cancels and waits for the worker

    void setPrompt(const QString& prompt);
    void generate();  // base, then fine-tuned (when a run is selected), on a worker thread
    void cancel();
    bool busy() const { return m_watcher.isRunning(); }
    QString baseText() const;
    QString tunedText() const;
    int tokensStreamed() const { return m_tokens; }
    QComboBox* runBox() const { return m_run; }

Q_SIGNALS:
    void tokenArrived(int side, const QString& text);  // side 0: base, 1: fine-tuned
    void generationFinished(const QString& message);

private:
    struct Job;
    void refreshRuns();
    void appendToken(int side, const QString& text);

    StudioState* m_state;
    QPlainTextEdit* m_prompt = nullptr;
    QComboBox* m_template = nullptr;
    QComboBox* m_run = nullptr;
    QSpinBox *m_maxTokens = nullptr, *m_topK = nullptr, *m_seed = nullptr;
    QDoubleSpinBox *m_temperature = nullptr, *m_topP = nullptr, *m_repetition = nullptr;
    QCheckBox* m_greedy = nullptr;
    QPushButton *m_generate = nullptr, *m_stop = nullptr;
    QPlainTextEdit *m_base = nullptr, *m_tuned = nullptr;
    QLabel *m_baseTitle = nullptr, *m_tunedTitle = nullptr;
    QLabel* m_status = nullptr;
    QFutureWatcher<QString> m_watcher;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    // Loaded models, reused while their source is unchanged; touched only by the (single) worker.
    std::shared_ptr<Model> m_baseModel, m_tunedModel;
    QString m_baseModelPath, m_tunedModelRun;
    int m_tokens = 0;
};

} // namespace tb
