// Palette-driven plot colours: Base for the canvas, Text for axes and labels, Mid for the grid.
#include "plot_style.h"

#include <qcustomplot.h>

#include <QPalette>

namespace tb {

void applyPlotPalette(QCustomPlot* plot, const QPalette& palette)
{
    const QColor base = palette.color(QPalette::Base);
    const QColor text = palette.color(QPalette::Text);
    QColor grid = palette.color(QPalette::Mid);
    grid.setAlpha(110);
    plot->setBackground(QBrush(base));
    for (QCPAxisRect* rect : plot->axisRects()) {
        rect->setBackground(QBrush(base));
        for (QCPAxis* axis : rect->axes()) {
            axis->setBasePen(QPen(text, 1));
            axis->setTickPen(QPen(text, 1));
            axis->setSubTickPen(QPen(text, 1));
            axis->setTickLabelColor(text);
            axis->setLabelColor(text);
            axis->grid()->setPen(QPen(grid, 1, Qt::DotLine));
            axis->grid()->setZeroLinePen(QPen(grid, 1));
        }
    }
    QColor legend = base;
    legend.setAlpha(215);
    plot->legend->setBrush(QBrush(legend));
    plot->legend->setBorderPen(QPen(text, 1));
    plot->legend->setTextColor(text);
    for (int i = 0; i < plot->plotLayout()->elementCount(); ++i)
        if (auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->elementAt(i)))
            title->setTextColor(text);
}

}  // namespace tb
