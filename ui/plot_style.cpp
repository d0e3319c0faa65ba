// Palette-driven plot colours: Base for the canvas, Text for axes and labels, Mid for the grid;
// the titled plot and graph every live plot of the studio starts from.
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

void setPlotFont(QCustomPlot* plot, const QFont& font)
{
    QFont title = font;
    title.setBold(true);
    title.setPointSizeF(font.pointSizeF() * 1.2);
    for (QCPAxisRect* rect : plot->axisRects())
        for (QCPAxis* axis : rect->axes()) {
            axis->setTickLabelFont(font);
            axis->setLabelFont(font);
        }
    plot->legend->setFont(font);
    for (int i = 0; i < plot->itemCount(); ++i)
        if (auto* text = qobject_cast<QCPItemText*>(plot->item(i)))
            text->setFont(font);
    for (int i = 0; i < plot->plotLayout()->elementCount(); ++i)
        if (auto* t = qobject_cast<QCPTextElement*>(plot->plotLayout()->elementAt(i)))
            t->setFont(title);
}

QCustomPlot* makeTitledPlot(QWidget* parent, const QString& title, const QString& x,
                            const QString& y)
{
    auto* p = new QCustomPlot(parent);
    p->setMinimumSize(240, 180);
    p->plotLayout()->insertRow(0);
    auto* t = new QCPTextElement(
        p, title, QFont(parent->font().family(), parent->font().pointSize(), QFont::Bold));
    p->plotLayout()->addElement(0, 0, t);
    p->xAxis->setLabel(x);
    p->yAxis->setLabel(y);
    p->legend->setVisible(true);
    QFont small = parent->font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    p->legend->setFont(small);
    p->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    p->setNoAntialiasingOnDrag(true);
    applyPlotPalette(p, parent->palette());
    return p;
}

QCPGraph* makePlotGraph(QCustomPlot* p, const QString& name, const QColor& color, bool dots,
                        QCPAxis* y)
{
    auto* g = p->addGraph(p->xAxis, y ? y : p->yAxis);
    g->setName(name);
    g->setPen(QPen(color, dots ? 1 : 1.6));
    if (dots) {
        g->setLineStyle(QCPGraph::lsNone);
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, color, color, 4));
    }
    return g;
}

}  // namespace tb
