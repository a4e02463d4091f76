#!/usr/bin/env python3
"""Paired deal-vs-steal ratios of mir_suite runs of several builds.

Reads the JSON files of bench/device_ab_builds.sh (<build>-<round>.json in
one folder) and prints, per file and placement, the median over paired
rounds of t(steal) / t(deal) (with both medians in ms), then per build the
median and minimum of those ratios.

    python3 bench/deal_ab_ratios.py bench/results/2026-11-24-16core-deal-ab/x3-x4-old [program]
"""
import json,sys,glob,statistics as st,collections
d=sys.argv[1]; prog=sys.argv[2] if len(sys.argv)>2 else 'reduction'
by=collections.defaultdict(list)
for f in sorted(glob.glob(f'{d}/*.json')):
  side=f.split('/')[-1].rsplit('-',1)[0]
  j=json.load(open(f)); b=j['benchmarks'][0]
  ms={m['name']:m['samples_seconds'] for m in b['measurements']}
  out=[]
  for pl in ['fine','coarse','standard','auto(fine)']:
    s=ms.get(f'{prog} steal+{pl}'); dd=ms.get(f'{prog} deal+{pl}')
    if not s or not dd: continue
    r=sorted(a/b for a,b in zip(s,dd)); out.append(f'{pl} {st.median(r):.3f} ({st.median(s)*1e3:.2f}/{st.median(dd)*1e3:.2f})')
    by[side].append(st.median(r))
  print(f.split('/')[-1],' | '.join(out))
for k,v in by.items(): print(k,'median',f'{st.median(v):.3f}', 'min', f'{min(v):.3f}')
