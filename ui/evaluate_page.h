// The Evaluate page: the base model and runs answer the same held-out cases on a worker
// (EvalController) with progress and Cancel; the scorecard (scores with 95% intervals, paired
// differences with verdicts) as a table and a bar chart, the per-example table (sortable by a score
// difference, failing rows only, differing answers shaded and diffed word by word; a store case
// opens on the Data page), a regression suite tab with its gate, a blind comparison tab over the
// project's store, and the report exported as Markdown, HTML or CSV.
#pragma once

#include <QWidget>

#include <memory>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QTableView;
class QTextBrowser;
class QVBoxLayout;

namespace tb {

class CompareView;
class DataStore;
class EvalController;
class EvalSettingsPanel;
class ExampleFilterProxy;
class ExampleTableModel;
class ScoreChart;
class ScorecardModel;
class StudioState;
class SuiteTableModel;
struct EvalOutcome;

class EvaluatePage : public QWidget {
    Q_OBJECT
public:
    enum class ReportFormat { Markdown, Html, Csv };

    explicit EvaluatePage(StudioState* state, QWidget* parent = nullptr);
    ~EvaluatePage() override;  // the controller (a child) cancels and waits for its worker

    // The Evaluate button: starts the settings' evaluation; false with the reason in the status.
    bool evaluate();
    void cancel();
    bool busy() const;
    // The Regression suite tab: runs `suiteFile` on `runDir` (empty: the tab's choices).
    bool runSuite(const QString& suiteFile = {}, const QString& runDir = {});
    // Writes the last evaluation's report; false with the reason in *error.
    bool exportReport(const QString& path, ReportFormat format, QString* error = nullptr) const;
    // The same on a worker (what the Export buttons do): the status line says when it is written,
    // and reportWritten comes.
    void exportReportInBackground(const QString& path, ReportFormat format);
    // Reports still being written by exportReportInBackground (closing waits for them).
    bool writingReports() const { return m_reportsWriting > 0; }
    // The Blind comparison tab: a comparison set of the base model's and system `system`'s
    // answers of the last evaluation, in the project's store.
    bool startBlindComparison(int system = 1);

    std::shared_ptr<const EvalOutcome> outcome() const;
    EvalSettingsPanel* settings() const { return m_settings; }
    EvalController* controller() const { return m_controller; }
    ScorecardModel* scorecardModel() const { return m_scorecard; }
    ExampleTableModel* exampleModel() const { return m_examples; }
    ExampleFilterProxy* exampleProxy() const { return m_proxy; }
    SuiteTableModel* suiteModel() const { return m_suite; }
    ScoreChart* chart() const { return m_chart; }
    QTableView* scorecardView() const { return m_scorecardView; }
    QTableView* exampleView() const { return m_exampleView; }
    QTableView* suiteView() const { return m_suiteView; }
    QCheckBox* failingOnlyBox() const { return m_failingOnly; }
    QComboBox* exampleRunBox() const { return m_exampleRun; }
    QProgressBar* progressBar() const { return m_progress; }
    QPushButton* evaluateButton() const { return m_evaluate; }
    QPushButton* cancelButton() const { return m_cancel; }
    QTabWidget* tabs() const { return m_tabs; }
    QTextBrowser* diffView() const { return m_diff; }
    QString statusText() const;
    QString gateText() const;
    QString blindStatusText() const;
    CompareView* compareView() const { return m_compare; }

Q_SIGNALS:
    // exportReportInBackground's file is written (error empty) or could not be.
    void reportWritten(const QString& path, const QString& error);
    void evaluationFinished(bool ok, bool cancelled, const QString& message);
    void suiteFinished(bool ok, bool cancelled, const QString& message);
    // A per-example row of a store case was double-clicked: the main window shows the record.
    void showRecordRequested(qint64 recordId);

private:
    QWidget* buildScorecardTab();
    QWidget* buildExamplesTab();
    QWidget* buildSuiteTab();
    QWidget* buildBlindTab();
    QWidget* buildExportRow();
    void showOutcome();
    void showExample(const QModelIndex& proxyIndex);
    void openExample(const QModelIndex& proxyIndex);
    void onEvaluationFinished(bool ok, bool cancelled, const QString& message);
    void onSuiteFinished(bool ok, bool cancelled, const QString& message);
    void updateButtons();
    void refreshSuiteRuns();
    void setStatus(const QString& text);
    static bool writeReport(const EvalOutcome& o, const QString& path, ReportFormat format,
                            QString* error);
    void exportWithDialog(ReportFormat format);

    StudioState* m_state;
    EvalController* m_controller = nullptr;
    EvalSettingsPanel* m_settings = nullptr;
    QPushButton *m_evaluate = nullptr, *m_cancel = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_status = nullptr;
    QTabWidget* m_tabs = nullptr;
    ScorecardModel* m_scorecard = nullptr;
    QTableView* m_scorecardView = nullptr;
    ScoreChart* m_chart = nullptr;
    ExampleTableModel* m_examples = nullptr;
    ExampleFilterProxy* m_proxy = nullptr;
    QTableView* m_exampleView = nullptr;
    QComboBox* m_exampleRun = nullptr;
    QCheckBox* m_failingOnly = nullptr;
    QTextBrowser* m_diff = nullptr;
    SuiteTableModel* m_suite = nullptr;
    QTableView* m_suiteView = nullptr;
    QLineEdit* m_suiteFile = nullptr;
    QComboBox* m_suiteRun = nullptr;
    QCheckBox* m_suiteSkipBase = nullptr;
    QPushButton* m_runSuite = nullptr;
    QLabel* m_gate = nullptr;
    QComboBox* m_blindRun = nullptr;
    QPushButton* m_startBlind = nullptr;
    QLabel* m_blindStatus = nullptr;
    QVBoxLayout* m_blindLayout = nullptr;
    CompareView* m_compare = nullptr;         // made on the first blind comparison
    int m_reportsWriting = 0;                 // exportReportInBackground's files not yet written
    std::unique_ptr<DataStore> m_blindStore;  // the project's store, this page's connection
    QString m_blindStorePath;
    QString m_runsListedFrom;  // the output folder the run lists were read from
    QList<QPushButton*> m_exportButtons;
};

}  // namespace tb
