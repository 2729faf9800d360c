#!/usr/bin/env python3
"""Compare Touchstone 2-port files (docs/ACCURACY.md): the -3 dB edges of S21 around the
passband and the largest |S21| difference in dB where the reference |S21| > -20 dB.
Usage: edges.py REFERENCE.s2p OTHER.s2p..."""
import sys, math
def read(path):
    fs=[]; s11=[]; s21=[]
    for line in open(path):
        line=line.split('!')[0].strip()
        if not line or line[0] in '#[': continue
        t=[float(x) for x in line.split()]
        if len(t)<9: continue
        fs.append(t[0]); s11.append(complex(t[1],t[2])); s21.append(complex(t[3],t[4]))
    return fs,s11,s21
def db(z): return 20*math.log10(max(abs(z),1e-15))
def edges(fs,s21,level=-3.0,band=(30e9,33.5e9)):
    # outermost crossings of level around the passband (max of S21 within band)
    d=[db(z) for z in s21]
    idx=[k for k,f in enumerate(fs) if band[0]<=f<=band[1]]
    above=[k for k in idx if d[k]>=level]
    if not above: return (float('nan'),float('nan'))
    lo,hi=above[0],above[-1]
    def cross(k0,k1):
        f0,f1,d0,d1=fs[k0],fs[k1],d[k0],d[k1]
        return f0+(level-d0)*(f1-f0)/(d1-d0)
    return cross(lo-1,lo), cross(hi,hi+1)
def main():
    ref=sys.argv[1]
    fr,_,sr=read(ref)
    er=edges(fr,sr)
    print(f"{'file':40s} {'f_lo GHz':>10s} {'f_hi GHz':>10s} {'dlo %':>8s} {'dhi %':>8s} {'max|dS21| dB (|S21|>-20)':>26s}")
    for p in [ref]+sys.argv[2:]:
        f,_,s=read(p)
        e=edges(f,s)
        dd=max((abs(db(a)-db(b)) for a,b in zip(s,sr) if db(b)>-20), default=float('nan'))
        print(f"{p[-40:]:40s} {e[0]/1e9:10.4f} {e[1]/1e9:10.4f} {100*(e[0]/er[0]-1):8.3f} {100*(e[1]/er[1]-1):8.3f} {dd:26.3f}")
main()
