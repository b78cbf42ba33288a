// The fat-tree DCTCP workload of `make bench` in ns-3 3.44 (C++ against the libraries of the PyPI wheel
// ns3==3.44.post0, as fanin_ns3.cc), built by bench/setup_ns3.sh.
//
// The topology and every flow's path come from a file bench/run.py writes from cnsim's own scenario
// (its fat_tree preset and the ECMP paths the engine gives each flow, data and ACKs), so both
// simulators carry the same flows over the same links:
//
//   node <i> host|switch          nodes in cnsim's order
//   link <a> <b>                  every link, in cnsim's order
//   flow <src> <dst> path <n ...> ack <n ...>   node paths of the data and of the ACKs
//
// All links: rateGbps, delayUs. Switch egress ports: a RED queue disc used as DCTCP's marker (QW = 1,
// MinTh = MaxTh = K packets, ECN marks instead of early drops) over a drop-tail limit of bufBytes;
// the device queue holds one packet so that the queue disc holds the backlog. Hosts: a FIFO queue
// disc deep enough never to drop. Each flow is a BulkSend (unlimited) over DCTCP (TcpDctcp, no SACK,
// no timestamps, an ACK per segment, initial window 10, minimum RTO 1 ms) to a PacketSink.
// Forwarding follows the file's paths: a routing protocol of ten lines keyed by (source, destination).
//
// Usage: fattree_ns3 --topo=FILE --ms=10 [--rateGbps=10] [--delayUs=1] [--bufBytes=150000]
//                    [--ecnBytes=97500] [--mss=1460] [--seed=1]
// Prints one line of key=value figures (bench/run.py's contract): setup_s, run_s, wall_s, events,
// delivered (data segments delivered in order to the applications), goodput_gbps, dropped, marked.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/resource.h>

using namespace ns3;

/// Forwarding by (source, destination) address pair, as the file's paths say; local delivery for the
/// node's own addresses; a host sends everything on its one interface.
class PathRouting : public Ipv4RoutingProtocol
{
  public:
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> next; // (src, dst) -> output interface

    Ptr<Ipv4Route> RouteOutput(Ptr<Packet>, const Ipv4Header& h, Ptr<NetDevice>, Socket::SocketErrno& err) override
    {
        uint32_t iface = Lookup(h.GetSource().Get() == 0 ? Own() : h.GetSource(), h.GetDestination());
        if (iface == 0)
        {
            err = Socket::ERROR_NOROUTETOHOST;
            return nullptr;
        }
        err = Socket::ERROR_NOTERROR;
        return Route(h.GetDestination(), iface);
    }

    bool RouteInput(Ptr<const Packet> p, const Ipv4Header& h, Ptr<const NetDevice> idev,
                    const UnicastForwardCallback& ucb, const MulticastForwardCallback&,
                    const LocalDeliverCallback& lcb, const ErrorCallback& ecb) override
    {
        if (m_ipv4->IsDestinationAddress(h.GetDestination(), m_ipv4->GetInterfaceForDevice(idev)))
        {
            lcb(p, h, m_ipv4->GetInterfaceForDevice(idev));
            return true;
        }
        uint32_t iface = Lookup(h.GetSource(), h.GetDestination());
        if (iface == 0)
        {
            ecb(p, h, Socket::ERROR_NOROUTETOHOST);
            return true;
        }
        ucb(Route(h.GetDestination(), iface), p, h);
        return true;
    }

    void NotifyInterfaceUp(uint32_t) override {}
    void NotifyInterfaceDown(uint32_t) override {}
    void NotifyAddAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void NotifyRemoveAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void SetIpv4(Ptr<Ipv4> ipv4) override { m_ipv4 = ipv4; }
    void PrintRoutingTable(Ptr<OutputStreamWrapper>, Time::Unit) const override {}

  private:
    Ptr<Ipv4> m_ipv4;

    Ipv4Address Own() const { return m_ipv4->GetAddress(1, 0).GetLocal(); }

    uint32_t Lookup(Ipv4Address src, Ipv4Address dst) const
    {
        auto it = next.find({src.Get(), dst.Get()});
        if (it != next.end())
        {
            return it->second;
        }
        return m_ipv4->GetNInterfaces() == 2 ? 1 : 0; // a host: its one interface
    }

    Ptr<Ipv4Route> Route(Ipv4Address dst, uint32_t iface) const
    {
        Ptr<Ipv4Route> r = Create<Ipv4Route>();
        r->SetDestination(dst);
        r->SetSource(m_ipv4->GetAddress(iface, 0).GetLocal());
        r->SetGateway(Ipv4Address("0.0.0.0"));
        r->SetOutputDevice(m_ipv4->GetNetDevice(iface));
        return r;
    }
};

struct FlowSpec
{
    uint32_t src, dst;
    std::vector<uint32_t> path, ack;
};

int
main(int argc, char* argv[])
{
    auto t0 = std::chrono::steady_clock::now();
    std::string topo;
    double ms = 10.0, rateGbps = 10.0, delayUs = 1.0;
    uint32_t bufBytes = 150000, ecnBytes = 97500, mss = 1460, seed = 1;
    CommandLine cmd;
    cmd.AddValue("topo", "topology and paths file (bench/run.py)", topo);
    cmd.AddValue("ms", "simulated time, ms", ms);
    cmd.AddValue("rateGbps", "link rate, Gb/s", rateGbps);
    cmd.AddValue("delayUs", "link propagation delay, us", delayUs);
    cmd.AddValue("bufBytes", "switch egress limit, bytes", bufBytes);
    cmd.AddValue("ecnBytes", "DCTCP marking threshold K, bytes", ecnBytes);
    cmd.AddValue("mss", "TCP segment payload, bytes", mss);
    cmd.AddValue("seed", "RNG seed", seed);
    cmd.Parse(argc, argv);
    RngSeedManager::SetSeed(seed);

    std::vector<bool> isHost;
    std::vector<std::pair<uint32_t, uint32_t>> links;
    std::vector<FlowSpec> flows;
    std::ifstream in(topo);
    if (!in)
    {
        fprintf(stderr, "fattree_ns3: cannot read --topo=%s\n", topo.c_str());
        return 2;
    }
    for (std::string line; std::getline(in, line);)
    {
        std::istringstream s(line);
        std::string kind;
        s >> kind;
        if (kind == "node")
        {
            uint32_t i;
            std::string what;
            s >> i >> what;
            isHost.push_back(what == "host");
        }
        else if (kind == "link")
        {
            uint32_t a, b;
            s >> a >> b;
            links.emplace_back(a, b);
        }
        else if (kind == "flow")
        {
            FlowSpec f;
            std::string word;
            s >> f.src >> f.dst >> word;
            std::vector<uint32_t>* into = &f.path;
            while (s >> word)
            {
                if (word == "ack")
                {
                    into = &f.ack;
                    continue;
                }
                into->push_back(std::stoul(word));
            }
            flows.push_back(f);
        }
    }

    double frameBytes = mss + 40 + 2; // TCP + IPv4 headers, PPP
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpDctcp"));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 24));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(1 << 24));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(1)));
    Config::SetDefault("ns3::RedQueueDisc::UseEcn", BooleanValue(true));
    Config::SetDefault("ns3::RedQueueDisc::UseHardDrop", BooleanValue(false));
    Config::SetDefault("ns3::RedQueueDisc::MeanPktSize", UintegerValue(uint32_t(frameBytes)));
    Config::SetDefault("ns3::RedQueueDisc::QW", DoubleValue(1.0));
    Config::SetDefault("ns3::RedQueueDisc::MinTh", DoubleValue(ecnBytes / frameBytes));
    Config::SetDefault("ns3::RedQueueDisc::MaxTh", DoubleValue(ecnBytes / frameBytes));
    Config::SetDefault("ns3::RedQueueDisc::MaxSize",
                       QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, uint32_t(bufBytes / frameBytes))));

    NodeContainer nodes;
    nodes.Create(isHost.size());
    InternetStackHelper stack;
    stack.Install(nodes);

    PointToPointHelper p2p;
    std::ostringstream rate;
    rate << rateGbps << "Gbps";
    p2p.SetDeviceAttribute("DataRate", StringValue(rate.str()));
    p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds(int64_t(delayUs * 1000))));
    p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("1p"));
    TrafficControlHelper red;
    red.SetRootQueueDisc("ns3::RedQueueDisc", "LinkBandwidth", StringValue(rate.str()), "LinkDelay",
                         TimeValue(NanoSeconds(int64_t(delayUs * 1000))));
    TrafficControlHelper fifo;
    fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue("100000p"));

    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.255.252");
    std::vector<Ipv4Address> hostAddr(isHost.size());
    std::map<std::pair<uint32_t, uint32_t>, std::pair<Ptr<NetDevice>, Ptr<NetDevice>>> devOf;
    QueueDiscContainer switchQueues;
    for (auto [a, b] : links)
    {
        NetDeviceContainer d = p2p.Install(nodes.Get(a), nodes.Get(b));
        for (uint32_t side = 0; side < 2; side++)
        {
            uint32_t n = side ? b : a;
            if (isHost[n])
            {
                fifo.Install(d.Get(side));
            }
            else
            {
                switchQueues.Add(red.Install(d.Get(side)));
            }
        }
        Ipv4InterfaceContainer ifs = addr.Assign(d);
        addr.NewNetwork();
        if (isHost[a])
        {
            hostAddr[a] = ifs.GetAddress(0);
        }
        if (isHost[b])
        {
            hostAddr[b] = ifs.GetAddress(1);
        }
        devOf[{a, b}] = {d.Get(0), d.Get(1)};
        devOf[{b, a}] = {d.Get(1), d.Get(0)};
    }
    std::vector<Ptr<PathRouting>> routing(isHost.size());
    for (uint32_t i = 0; i < isHost.size(); i++)
    {
        routing[i] = CreateObject<PathRouting>();
        nodes.Get(i)->GetObject<Ipv4>()->SetRoutingProtocol(routing[i]);
    }
    auto install = [&](const std::vector<uint32_t>& path, Ipv4Address src, Ipv4Address dst) {
        for (size_t j = 1; j + 1 < path.size(); j++)
        {
            Ptr<NetDevice> dev = devOf.at({path[j], path[j + 1]}).first;
            Ptr<Ipv4> ip = nodes.Get(path[j])->GetObject<Ipv4>();
            routing[path[j]]->next[{src.Get(), dst.Get()}] = ip->GetInterfaceForDevice(dev);
        }
    };

    uint16_t port = 9;
    std::vector<Ptr<PacketSink>> sinks;
    double endS = ms / 1000.0;
    for (auto& f : flows)
    {
        install(f.path, hostAddr[f.src], hostAddr[f.dst]);
        install(f.ack, hostAddr[f.dst], hostAddr[f.src]);
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer s = sink.Install(nodes.Get(f.dst));
        s.Start(Seconds(0.0));
        sinks.push_back(DynamicCast<PacketSink>(s.Get(0)));
        BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(hostAddr[f.dst], port));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        src.SetAttribute("SendSize", UintegerValue(mss * 64));
        ApplicationContainer c = src.Install(nodes.Get(f.src));
        c.Start(Seconds(0.0));
    }

    auto t1 = std::chrono::steady_clock::now();
    Simulator::Stop(Seconds(endS));
    Simulator::Run();
    auto t2 = std::chrono::steady_clock::now();

    uint64_t rxBytes = 0;
    for (auto& s : sinks)
    {
        rxBytes += s->GetTotalRx();
    }
    uint64_t dropped = 0, marked = 0;
    for (uint32_t i = 0; i < switchQueues.GetN(); i++)
    {
        QueueDisc::Stats st = switchQueues.Get(i)->GetStats();
        dropped += st.nTotalDroppedPackets;
        marked += st.nTotalMarkedPackets;
    }
    uint64_t events = Simulator::GetEventCount();
    Simulator::Destroy();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double setup = std::chrono::duration<double>(t1 - t0).count();
    double run = std::chrono::duration<double>(t2 - t1).count();
    uint64_t delivered = rxBytes / mss;
    printf("sim=ns3-3.44-cpp flows=%zu sim_ms=%.3f delivered=%lu dropped=%lu marked=%lu goodput_gbps=%.4f "
           "events=%lu setup_s=%.4f run_s=%.4f wall_s=%.4f max_rss_kb=%ld\n",
           flows.size(), ms, (unsigned long)delivered, (unsigned long)dropped, (unsigned long)marked,
           rxBytes * 8.0 / endS / 1e9, (unsigned long)events, setup, run, setup + run, ru.ru_maxrss);
    return 0;
}
