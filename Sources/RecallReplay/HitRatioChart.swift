import Foundation

/// A line chart of hit ratios as SVG, with no dependencies: one or more panels side by side,
/// categories on x (cache sizes), percent on y, one line per series.
struct HitRatioChart {
    struct Panel {
        var title: String
        var series: [(name: String, values: [Double])]
    }

    var title: String
    var xLabels: [String]
    var panels: [Panel]

    private static let palette = ["#d62728", "#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
    private static let beladyColor = "#2ca02c"
    private static let gridColor = "#ddd"

    var svg: String {
        let panelWidth = 420.0, height = 340.0, left = 56.0, right = 16.0, top = 48.0, bottom = 56.0, legendWidth = 120.0
        let width = panelWidth * Double(panels.count) + legendWidth
        let plotWidth = panelWidth - left - right, plotHeight = height - top - bottom
        let allValues = panels.flatMap { $0.series.flatMap(\.values) }
        let highest = min(100, max(10, allValues.max() ?? 100))
        let step = highest > 50 ? 20.0 : 10.0
        let maximum = (highest / step).rounded(.up) * step
        var out = #"<svg xmlns="http://www.w3.org/2000/svg" width="\#(Int(width))" height="\#(Int(height))" font-family="sans-serif" font-size="12">"# + "\n"
        out += #"<rect width="100%" height="100%" fill="white"/>"# + "\n"
        out += #"<text x="\#(Int(width / 2))" y="20" text-anchor="middle" font-size="14">\#(escape(title))</text>"# + "\n"
        let names = panels.first?.series.map(\.name) ?? []
        func color(_ name: String) -> String {
            if name == EvictionComparison.beladyName { return Self.beladyColor }
            let index = names.firstIndex(of: name) ?? 0
            return Self.palette[index % Self.palette.count]
        }
        for (panelIndex, panel) in panels.enumerated() {
            let origin = panelWidth * Double(panelIndex)
            func x(_ index: Int) -> Double {
                xLabels.count < 2 ? origin + left + plotWidth / 2 : origin + left + plotWidth * Double(index) / Double(xLabels.count - 1)
            }
            func y(_ value: Double) -> Double { top + plotHeight * (1 - value / maximum) }
            out += #"<text x="\#(f(origin + left + plotWidth / 2))" y="40" text-anchor="middle">\#(escape(panel.title))</text>"# + "\n"
            for tick in stride(from: 0.0, through: maximum, by: step) {
                out +=
                    #"<line x1="\#(f(origin + left))" y1="\#(f(y(tick)))" x2="\#(f(origin + left + plotWidth))" y2="\#(f(y(tick)))" stroke="\#(Self.gridColor)"/>"#
                    + "\n"
                out += #"<text x="\#(f(origin + left - 6))" y="\#(f(y(tick) + 4))" text-anchor="end">\#(Int(tick)) %</text>"# + "\n"
            }
            for (index, label) in xLabels.enumerated() {
                out += #"<text x="\#(f(x(index)))" y="\#(f(top + plotHeight + 18))" text-anchor="middle">\#(escape(label))</text>"# + "\n"
            }
            out += #"<text x="\#(f(origin + left + plotWidth / 2))" y="\#(f(height - 12))" text-anchor="middle">cache size</text>"# + "\n"
            for series in panel.series {
                let stroke = color(series.name)
                let dash = series.name == EvictionComparison.beladyName ? #" stroke-dasharray="6 4""# : ""
                let points = series.values.enumerated().map { "\(f(x($0.offset))),\(f(y($0.element)))" }.joined(separator: " ")
                out += #"<polyline fill="none" stroke="\#(stroke)" stroke-width="2"\#(dash) points="\#(points)"/>"# + "\n"
                for (index, value) in series.values.enumerated() {
                    out += #"<circle cx="\#(f(x(index)))" cy="\#(f(y(value)))" r="3" fill="\#(stroke)"/>"# + "\n"
                }
            }
        }
        for (offset, name) in names.enumerated() {
            let legendX = panelWidth * Double(panels.count) + 8, legendY = top + 10 + Double(offset) * 20
            out +=
                #"<line x1="\#(f(legendX))" y1="\#(f(legendY))" x2="\#(f(legendX + 20))" y2="\#(f(legendY))" stroke="\#(color(name))" stroke-width="2"/>"#
                + "\n"
            out += #"<text x="\#(f(legendX + 26))" y="\#(f(legendY + 4))">\#(escape(name))</text>"# + "\n"
        }
        return out + "</svg>\n"
    }

    private func f(_ value: Double) -> String { String((value * 10).rounded() / 10) }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
