#!/usr/bin/env python3
"""Prints EpochOrder(seed, epoch, size) computed independently of the C++ code.

A plain transcription of runtime/kindling/data/epoch_order.cc's documented
algorithm (SplitMix64 seeding, xoshiro256**, Lemire's bounded draws,
Fisher-Yates from the back), used to pin the orders in epoch_order_test.cc:

    python3 tests/data/epoch_order_reference.py
"""
M=(1<<64)-1
G=0x9e3779b97f4a7c15
def mix(z):
    z=((z^(z>>30))*0xbf58476d1ce4e5b9)&M
    z=((z^(z>>27))*0x94d049bb133111eb)&M
    return z^(z>>31)
def rotl(x,k): return ((x<<k)|(x>>(64-k)))&M
class Gen:
    def __init__(s,seed):
        s.s=[]
        for _ in range(4):
            seed=(seed+G)&M
            s.s.append(mix(seed))
    def bits(s):
        st=s.s
        r=(rotl((st[1]*5)&M,7)*9)&M
        t=(st[1]<<17)&M
        st[2]^=st[0]; st[3]^=st[1]; st[1]^=st[2]; st[0]^=st[3]; st[2]^=t; st[3]=rotl(st[3],45)
        return r
def below(g,n):
    # unbiased: reject draws in the short leftover zone (Lemire)
    while True:
        p=g.bits()*n
        if (p&M) >= ((1<<64)-n)%n: return p>>64
def order(seed,epoch,n):
    g=Gen(mix(mix(seed)^((epoch+G)&M)))
    o=list(range(n))
    for i in range(n-1,0,-1):
        j=below(g,i+1); o[i],o[j]=o[j],o[i]
    return o


if __name__ == "__main__":
    for seed, epoch, size in [(0, 0, 10), (42, 3, 10)]:
        print(f"EpochOrder({seed}, {epoch}, {size}) = {order(seed, epoch, size)}")
