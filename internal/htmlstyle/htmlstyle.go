// Package htmlstyle is the one stylesheet of privbo's HTML pages: the study report
// (pkg/study), the job report (pkg/jobs/jobreport) and the operator's console
// (pkg/console). Each page puts it in its head as <style>{{.}}</style> (a
// template.CSS, so html/template passes it unescaped).
package htmlstyle

import "html/template"

// CSS is the stylesheet: cards of key figures, tables with numeric cells, warnings.
const CSS template.CSS = `
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1000px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.sub { color: #666; margin-top: 0; }
.cards { display: flex; gap: 1em; flex-wrap: wrap; }
.card { background: #f4f7fb; border: 1px solid #d8e1ec; border-radius: 6px; padding: 0.7em 1.1em; min-width: 10em; }
.card .k { color: #666; font-size: 0.85em; }
.card .v { font-size: 1.4em; font-weight: 600; }
.card.rec { background: #eaf5ea; border-color: #b9dcb9; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.3em 0.7em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.best td { background: #fff4d6; }
img { max-width: 100%; border: 1px solid #eee; }
.err { color: #a00; }
.warn { background: #fff0f0; border: 1px solid #e8c0c0; padding: 0.5em 1em; border-radius: 6px; }
`
