// The Playground: one prompt, the base model's and the fine-tuned model's continuations side by
// side, streamed from a worker (GenerationController) in ~40 ms batches of tokens, with sampling
// settings; best-of-N samples N answers and ranks them by a reward-model run's scores.
#pragma once

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTableView;

namespace tb {

class GenerationController;
struct GenerationBatch;
struct GenerationRequest;
class RankedAnswersModel;
class StudioState;

class PlaygroundPage : public QWidget {
    Q_OBJECT
public:
    explicit PlaygroundPage(StudioState* state, QWidget* parent = nullptr);
    ~PlaygroundPage() override;  // cancels and waits for the worker

    void setPrompt(const QString& prompt);
    void generate();  // base, then fine-tuned (when a run is selected), on a worker thread
    void cancel();
    bool busy() const;
    QString baseText() const;
    QString tunedText() const;
    QString statusText() const;  // the line under the prompt (progress, or why it cannot generate)
    QPushButton* generateButton() const { return m_generate; }
    int tokensStreamed() const { return m_tokens; }
    QComboBox* runBox() const { return m_run; }
    GenerationController* controller() const { return m_controller; }
    // Sampling settings (the screenshot tour and tests set them through these).
    QSpinBox* maxTokensBox() const { return m_maxTokens; }
    QCheckBox* greedyBox() const { return m_greedy; }
    QComboBox* templateBox() const { return m_template; }
    // Best-of-N: the reward-model runs to score with, N (2-16), and the ranked answers.
    QComboBox* rewardRunBox() const { return m_rewardRun; }
    QSpinBox* bestOfNBox() const { return m_bestOf; }
    RankedAnswersModel* rankedAnswers() const { return m_ranked; }
    // N sampled answers from the chosen run (or the base), scored by the chosen reward run on the
    // worker; false when no reward run is chosen or a generation is running.
    bool bestOfN();

Q_SIGNALS:
    void tokenArrived(int side, const QString& text);  // per token, side 0: base, 1: fine-tuned
    void generationFinished(const QString& message);

private:
    void refreshRuns();
    void showModelMissing();  // a model without tokenizer or weights cannot generate: say so
    void onBatch(const GenerationBatch& batch);
    GenerationRequest request() const;  // the prompt and sampling settings
    void buildBestOfN(QWidget* box);

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
    GenerationController* m_controller = nullptr;
    QComboBox* m_rewardRun = nullptr;
    QSpinBox* m_bestOf = nullptr;
    QPushButton* m_bestOfButton = nullptr;
    RankedAnswersModel* m_ranked = nullptr;
    QTableView* m_rankedView = nullptr;
    int m_tokens = 0;
};

}  // namespace tb
