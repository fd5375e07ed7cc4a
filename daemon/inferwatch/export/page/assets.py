"""The page's inline style and script: system fonts only, nothing loaded from elsewhere."""

from __future__ import annotations

CSS = """
:root{color-scheme:light dark;--bg:#f6f7f9;--card:#fff;--ink:#1b1f24;--dim:#5b6470;
--line:#dde1e6;--red:#c62828;--amber:#b26a00;--green:#2e7d32}
@media (prefers-color-scheme:dark){:root{--bg:#111418;--card:#1b2027;--ink:#e6e9ee;
--dim:#9aa4b1;--line:#2c333d;--red:#ef5350;--amber:#ffb300;--green:#66bb6a}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);
font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"PingFang SC","Microsoft YaHei",sans-serif}
header{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:baseline;padding:.8rem 1rem;
border-bottom:1px solid var(--line);background:var(--card)}
header h1{font-size:1.15rem;margin:0}
nav a{margin-right:.8rem;color:inherit}
main{max-width:1100px;margin:0 auto;padding:.5rem .8rem 2rem}
section{margin:1rem 0}
h2{font-size:1.05rem;margin:.2rem 0 .5rem;border-bottom:1px solid var(--line);padding-bottom:.2rem}
h3{font-size:1rem;margin:0 0 .3rem;overflow-wrap:anywhere}
.count{font-size:.8rem;background:var(--dim);color:var(--bg);border-radius:.8rem;padding:0 .45rem}
.updated,.meta,small{color:var(--dim);font-size:.85rem}
.empty{color:var(--dim);font-style:italic}
article{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:.6rem .8rem;
margin:.5rem 0;overflow-wrap:anywhere}
.alert{border-left:5px solid var(--amber)}
.alert.firing.sev-critical{border-left-color:var(--red)}
.alert.pending{border-left-style:dashed}
.alert .state{text-transform:uppercase;font-size:.75rem;font-weight:700;color:var(--amber)}
.alert.firing.sev-critical .state{color:var(--red)}
.alert p{margin:.25rem 0}
.alert .muted{color:var(--dim);font-style:italic}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:.4rem .8rem}
.metric{display:flex;flex-direction:column}
.metric .k{color:var(--dim);font-size:.8rem}
.metric .v{font-size:1.25rem;font-variant-numeric:tabular-nums}
.spark{width:100%;max-width:160px;height:28px;color:var(--green)}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:.5rem}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.9rem}
td,th{text-align:left;vertical-align:top;padding:.3rem .4rem;border-bottom:1px solid var(--line);
overflow-wrap:anywhere}
th{color:var(--dim);font-weight:500;white-space:nowrap}
tr.warn td,tr.bad td:nth-child(2){color:var(--red);font-weight:600}
tr.off{opacity:.6}
.problems li{color:var(--red)}
code{font-size:.85rem}
.busy{fill:var(--amber);opacity:.18}
.chart{width:100%;height:90px;color:var(--green)}
figure{margin:.3rem 0}figcaption{font-size:.85rem;color:var(--dim)}
@media (max-width:600px){body{font-size:14px}.cards{grid-template-columns:1fr}
.grid{grid-template-columns:repeat(2,1fr)}
.scroll table,.scroll tbody,.scroll tr,.scroll td{display:block}
.scroll tr{padding:.3rem 0;border-bottom:1px solid var(--line)}
.scroll td{border:0;padding:.05rem .4rem}}
"""

# Reload the sections in place every 5 s (scrolling is kept); a failed fetch marks the time.
REFRESH_JS = """
(function(){var main=document.getElementById('main');
function tick(){fetch('?part=main',{cache:'no-store'}).then(function(r){
if(!r.ok)throw new Error(r.status);return r.text();}).then(function(t){main.innerHTML=t;
document.body.classList.remove('stale');}).catch(function(){
document.body.classList.add('stale');});}
setInterval(tick,5000);})();
"""

__all__ = ["CSS", "REFRESH_JS"]
