// One look for every QCustomPlot of the studio: colours from the widget's palette, so plots follow
// the system's light or dark theme like the rest of the window, and the titled plots and graphs
// the live plots share.
#pragma once

class QColor;
class QFont;
class QCPAxis;
class QCPGraph;
class QCustomPlot;
class QPalette;
class QString;
class QWidget;

namespace tb {

// Background, axes, tick labels, grid, legend and text elements from `palette` (Base, Text, Mid).
void applyPlotPalette(QCustomPlot* plot, const QPalette& palette);

// Every text of `plot` in `font` (tick labels and axis labels, the legend, text items, title rows:
// bold, 1.2x), so a plot can follow a page's font, as in the Memory page's presentation mode.
void setPlotFont(QCustomPlot* plot, const QFont& font);

// A plot with a bold title row, axis labels, a small legend at the top right and the palette of
// `parent`.
QCustomPlot* makeTitledPlot(QWidget* parent, const QString& title, const QString& x,
                            const QString& y);
// A line graph (or, with dots, points only) on `p`'s x axis and `y` (default: its left axis).
QCPGraph* makePlotGraph(QCustomPlot* p, const QString& name, const QColor& color, bool dots = false,
                        QCPAxis* y = nullptr);

}  // namespace tb
