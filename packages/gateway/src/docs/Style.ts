/**
 * The stylesheet `/docs` and `/playground` share, inlined in each page (no request elsewhere).
 * System fonts only; readable from phone width up; respects the reader's dark-mode preference.
 */
export const css = `
:root{--fg:#1b1f24;--muted:#57606a;--bg:#fff;--panel:#f6f8fa;--line:#d0d7de;--accent:#0b5cad;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;
color-scheme:light dark}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9da7b3;--bg:#0d1117;--panel:#161b22;--line:#30363d;--accent:#58a6ff;--ok:#3fb950;--bad:#f85149;--warn:#d29922}}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
a{color:var(--accent)}
code,pre,kbd{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:10px 12px;overflow:auto;white-space:pre;margin:.5em 0}
header.top{border-bottom:1px solid var(--line);padding:10px 16px;display:flex;gap:16px;align-items:center;flex-wrap:wrap}
header.top .brand{font-weight:700;font-size:18px;color:var(--fg);text-decoration:none}
header.top nav{display:flex;gap:14px;flex-wrap:wrap}
main{max-width:1100px;margin:0 auto;padding:8px 16px 48px}
h1{font-size:26px;margin:.6em 0 .3em}h2{font-size:21px;margin:1.6em 0 .4em;padding-top:.4em;border-top:1px solid var(--line)}
h3{font-size:17px;margin:1.2em 0 .3em}h4{font-size:15px;margin:1em 0 .3em}
.muted{color:var(--muted)}
.badge{display:inline-block;font-size:12px;line-height:18px;padding:0 7px;border-radius:9px;border:1px solid var(--line);background:var(--panel);white-space:nowrap;vertical-align:middle}
.badge.preview,.badge.beta{border-color:var(--warn);color:var(--warn)}.badge.ga{border-color:var(--ok);color:var(--ok)}
.badge.id{background:var(--accent);border-color:var(--accent);color:#fff;font-weight:600}
.m{display:inline-block;min-width:46px;text-align:center;font:600 12px/18px ui-monospace,monospace;border-radius:4px;padding:0 5px;color:#fff;background:#1f6feb}
.m.post{background:#1a7f37}.m.delete{background:#cf222e}
.table{overflow-x:auto;margin:.5em 0}
table{border-collapse:collapse;width:100%;font-size:14px}
th,td{border:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
th{background:var(--panel);font-weight:600}
td code{white-space:nowrap}
td.desc{min-width:220px}
.toc{columns:2 300px;column-gap:28px;padding:0;margin:.5em 0}
.toc li{list-style:none;break-inside:avoid;margin:0 0 4px}
.toc .group{font-weight:600;margin-top:8px}
.route{margin:4px 0;display:flex;gap:8px;align-items:baseline;flex-wrap:wrap}
.route code{word-break:break-all}
details{margin:.4em 0}summary{cursor:pointer;font-weight:600}
section.endpoint{scroll-margin-top:8px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:12px}
label{display:block;font-weight:600;margin:10px 0 3px}
label .hint{font-weight:400;color:var(--muted);font-size:13px;display:block}
input,select,textarea,button{font:inherit;color:inherit}
input[type=text],input[type=number],input[type=password],select,textarea{width:100%;padding:7px 9px;border:1px solid var(--line);border-radius:6px;background:var(--bg)}
textarea{min-height:70px;resize:vertical}
input[aria-invalid=true],select[aria-invalid=true],textarea[aria-invalid=true]{border-color:var(--bad);outline-color:var(--bad)}
.field-error{color:var(--bad);font-size:13px;margin-top:3px}
button{padding:8px 16px;border-radius:6px;border:1px solid var(--accent);background:var(--accent);color:#fff;font-weight:600;cursor:pointer}
button.secondary{background:transparent;color:var(--accent)}
button:disabled{opacity:.6;cursor:default}
.panel{border:1px solid var(--line);border-radius:8px;padding:12px 14px;background:var(--panel)}
.status{font-weight:600}.status.completed{color:var(--ok)}.status.failed{color:var(--bad)}
progress{width:100%;height:12px}
video,img.result{max-width:100%;border-radius:6px;border:1px solid var(--line);background:#000}
.row{display:flex;gap:8px;align-items:center;flex-wrap:wrap}
.checkbox{display:flex;gap:8px;align-items:center;font-weight:600;margin:10px 0 3px}
.checkbox input{width:auto}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
@media (max-width:600px){table.fields thead{display:none}table.fields,table.fields tbody,table.fields tr,table.fields td{display:block;width:100%}
table.fields tr{border:1px solid var(--line);border-radius:6px;margin:0 0 8px;padding:4px 0}table.fields td{border:0;padding:2px 8px}
table.fields td.name{background:var(--panel)}table.fields td[data-label]:empty{display:none}
table.fields td[data-label]::before{content:attr(data-label) ": ";font-weight:600;color:var(--muted)}
body{font-size:15px}h1{font-size:22px}main{padding:6px 12px 40px}th,td{padding:4px 6px}}
`
