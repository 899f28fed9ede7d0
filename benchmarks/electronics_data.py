"""A third synthetic data set: a consumer-electronics retailer's export with crowd-rated searches.

The shape our search model is weakest on (think Best Buy, and the CrowdFlower search-relevance data):

* ``items.csv``: ``item_id,title,description,brand,color,type,price,attributes``. About 40% are
  devices (phones, tablets, laptops, cameras, TVs, monitors, projectors, speakers, headphones,
  consoles, smartwatches, e-readers, printers, routers, iPods/MP3 players) in families: colour,
  storage, size and carrier variants of one model are separate items, as in a real export, and
  popular models come back "Geek Squad Certified Refurbished". About 60% are accessories (cases,
  screen protectors, chargers, HDMI/USB-C/Lightning/optical cables, batteries, mounts, bags,
  stands, adapters, memory cards, controllers, computer fans, keyboards, mice, remotes, docks ...),
  mostly from accessory brands, titled with the device they fit ("Otterbox - Defender Series Case
  for Apple iPhone 14 - Black"). ``attributes`` holds 4-15 ``key:value`` pairs joined by ``|``
  with a real spec export's traps: ``brand_compatibility``/``device_compatibility`` on
  accessories, keys that carry words with negative values (``apple_docking_compatibility:Not
  supported``, ``bluetooth_enabled:No``, ``hdmi_inputs:0``, ``water_resistant:false``), numbers
  with units, model codes, ``color:`` repeated. ~10% of descriptions, ~5% of spec cells are empty.
* ``interactions.csv``: ``query,item_id,label`` (the CrowdFlower shape): ~140 shopper queries,
  each with 25-45 items a mediocre site returned (some relevant, then lexical look-alikes such
  as accessories naming the query's device, then a few random ones), labelled 0..3 by the median
  of three noisy raters of the hidden true relevance.
* ``judgments.csv``: ``query,item_id,grade``: for the same queries, every item with true grade >= 1.

The true relevance (:func:`true_grade`) comes from an item's hidden record (kind, brand, the
devices it fits, its full specs) through per-intent rules (:data:`INTENTS`), never from the
query's words: "waterproof speaker" is not met by ``water_resistant:false``, "pro controller" is
not an iPad Pro case, "apple" puts Apple's products above Otterbox cases merely compatible with
Apple. :func:`make_catalogue` rebuilds the items and their records for a seed.

Usage: ``python benchmarks/electronics_data.py --out DIR [--items 8000] [--queries 140]
[--seed 0]``. Only ``numpy.random.default_rng(seed)`` is used; output is deterministic per seed.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import sys
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

# Text tables: fields split on " | "; an indented line continues the row above; `key=value` specs
# split on ";" (keys may be ALIAS abbreviations); lists split on ","; a brace group {a,b} makes a
# row per alternative (groups of one length vary together, groups of different lengths cross).
ALIAS = {"scr": "screen_size", "os": "operating_system", "bat": "battery_life",
         "bt": "bluetooth_enabled", "conn": "connector_type", "wr": "water_resistant",
         "ip": "water_resistance_rating", "anc": "active_noise_cancelling", "fit": "headphone_fit",
         "res": "resolution", "mp": "effective_resolution", "hdmi": "hdmi_inputs",
         "hout": "hdmi_outputs", "smart": "smart_platform", "jack": "headphone_jack",
         "wc": "wireless_charging", "lum": "brightness", "hz": "refresh_rate",
         "maxhz": "maximum_refresh_rate", "disp": "display_type", "watts": "maximum_output_power",
         "c1": "connector_type_1", "c2": "connector_type_2", "maxres": "maximum_resolution",
         "chem": "battery_chemistry", "cx": "connectivity", "stor": "storage_capacity",
         "voice": "voice_assistant_built_in", "plat": "compatible_platforms", "touch": "touch_screen"}
UNITS = {"screen_size": "inches", "battery_life": "hours", "effective_resolution": "megapixels",
         "brightness": "lumens", "refresh_rate": "hertz", "maximum_refresh_rate": "hertz",
         "maximum_output_power": "watts", "maximum_wattage": "watts"}
NEGATIVE = {"No", "None", "0", "false", "Not supported", "Not applicable"}
DEVICE_SHARE = 0.4

# kind | type | noun | share | title body | colour in title | default specs
KINDS_TABLE = """
phone | Cell Phones | phone | 14 | {short} {opt} ({carrier}) | y | stor={storage};carrier={carrier};os=Android 14
  ;bt=Yes;jack=No;wr=true;ip=IP68;wc=Yes;conn=USB-C
tablet | Tablets | tablet | 8 | {short} {sz}" {opt} | y | stor={storage};cellular_compatible={cell};bt=Yes;jack=No
  ;wr=false;os=iPadOS 17;bat=10;stylus_support=Not supported
laptop | Laptops | laptop | 10 | {short} {sz}" Laptop - {desc} - {opt} | y | stor={storage};system_memory={memory}
  ;touch=No;hout=1;bt=Yes;backlit_keyboard=Yes;os=Windows 11 Home;bat=10
camera | Cameras | camera | 9 | {short} {desc} {opt} | n | wr=false;ip=None;wifi_built_in=Yes;bt=Yes
  ;image_stabilization=Yes;video_resolution=4K;apple_docking_compatibility=Not supported
tv | TVs | TV | 12 | {opt}" Class {short} {desc} | n | scr={opt};res=4K (2160p);hdmi=3;hz=60;bt=Yes
  ;apple_airplay=Not supported;usb_port_quantity=1;disp=LED;high_dynamic_range=Yes
monitor | Monitors | monitor | 6 | {short} {opt}" {desc} | n | scr={opt};hdmi=1;speakers_built_in=No;curved_screen=No
  ;usb_c_input=No;maxhz=60;bt=No;res=1080p
projector | Projectors | projector | 3 | {short} {desc} | n | hdmi=2;battery_powered=No;bt=No;native_resolution=1080p
  ;lum=2,000
speaker | Portable Bluetooth Speakers | speaker | 7 | {short} {desc} | y | bt=Yes;wr=false;ip=None;voice=None;bat=12
  ;apple_docking_compatibility=Not supported
headphones | Headphones | headset | 12 | {short} {desc} | y | anc=No;wireless=Yes;bt=Yes;microphone=Yes;wr=false
  ;bat=30;fit=Over-the-Ear
console | Video Game Consoles | console | 4 | {short} {opt} {desc} | y | disc_drive=Yes;maximum_resolution=4K
  ;portable=No;hout=1;bt=Yes;stor={storage}
watch | Smartwatches | smartwatch | 6 | {short} {opt} {desc} | y | case_size={mm};wr=true
  ;water_resistance_depth=50 meters;gps=Yes;cellular_compatible=No;plat=Android, iOS;bat=18
ereader | E-Readers | e-reader | 2 | {short} {opt} - {sz}" E-Reader | y | stor={storage};wr=true;ip=IPX8
  ;front_light=Yes;bt=Yes;bat=10 weeks;scr=6.8
printer | Printers | printer | 4 | {short} {desc} | n | printer_type=Inkjet;color_printing=Yes;wireless_printing=Yes
  ;duplex_printing=Yes;scanner=Yes;apple_airprint=Yes
router | Wi-Fi Routers | router | 3 | {short} {desc} {opt} | n | wifi_standard=Wi-Fi 6 (802.11ax);mesh_compatible=No
  ;number_of_ethernet_ports=4;usb_ports=0;bt=No
mp3 | iPods & MP3 Players | music player | 2 | {short} {opt} {desc} | y | stor={storage};bt=No;fm_radio=No;bat=20
  ;wifi_built_in=No
"""
SUB_TYPE = {"camera/dslr": "DSLR Cameras", "camera/mirrorless": "Mirrorless Cameras",
            "camera/action": "Action Cameras", "camera/compact": "Point & Shoot Cameras",
            "speaker/smart": "Smart Speakers", "headphones/earbuds": "Earbuds",
            "headphones/gaming": "Gaming Headsets", "router/switch": "Network Switches",
            "router/mesh": "Mesh Wi-Fi Systems", "keyboard/combo": "Keyboard & Mouse Combos",
            "computer_fan/cooler": "CPU Cooling"}
# typical (height inches, weight pounds) of a device; TVs and monitors scale with the screen
DIMS = {"phone": (6.1, 0.4), "tablet": (9.8, 1.1), "laptop": (0.7, 3.2), "camera": (3.9, 1.4),
        "projector": (4.5, 6.0), "speaker": (7.0, 1.8), "headphones": (7.5, 0.6),
        "console": (14.0, 9.0), "watch": (1.7, 0.1), "ereader": (6.9, 0.4), "printer": (9.0, 14.0),
        "router": (7.5, 1.8), "mp3": (4.0, 0.2)}
CARRIERS = ("Unlocked", "Verizon", "AT&T", "T-Mobile", "Boost Mobile")

# kind[/sub] brand | short[~descriptor] | price | colours | options | specs; a row with brace
# alternatives ({a,b}) is one model per alternative.
DEVICES = """
phone Apple | iPhone 14{, Plus} | 699 | Midnight,Starlight,Blue,Purple,Yellow,(PRODUCT)RED | 128GB,256GB,512GB
  | scr=6.1;os=iOS 17;bat=20;conn=Lightning
phone Apple | iPhone 14 Pro{, Max} | 899 | Deep Purple,Space Black,Gold,Silver | 128GB,256GB,512GB,1TB | scr=6.1
  ;os=iOS 17;bat=23;conn=Lightning
phone Apple | iPhone 15{, Plus} | 799 | Black,Blue,Green,Yellow,Pink | 128GB,256GB,512GB | scr=6.1;os=iOS 17
phone Apple | iPhone 15 Pro{, Max} | 999 | Natural Titanium,Blue Titanium,White Titanium,Black Titanium | 128GB,256GB
  ,512GB,1TB | scr=6.7;os=iOS 17;bat=29
phone Samsung | Galaxy S23{,+} | 799 | Phantom Black,Cream,Green,Lavender | 128GB,256GB,512GB | scr=6.1;bat=22
phone Samsung | Galaxy S23 Ultra | 1199 | Phantom Black,Cream,Green,Lavender | 256GB,512GB,1TB | scr=6.8;bat=26
phone Samsung | Galaxy S24{,+} | 799 | Onyx Black,Marble Gray,Cobalt Violet,Amber Yellow | 128GB,256GB,512GB | scr=6.2
phone Samsung | Galaxy Z {Flip5,Fold5} | 999 | Graphite,Cream,Mint,Lavender | 256GB,512GB | scr=6.7;ip=IPX8
phone Samsung | Galaxy A{15,25,54} 5G | 199 | Black,Blue Black,Light Blue | 128GB | scr=6.4;ip=IP67;wc=No
phone Google | Pixel 8{, Pro} | 699 | Obsidian,Hazel,Rose,Bay | 128GB,256GB,512GB | scr=6.2
phone Google | Pixel 7a | 499 | Charcoal,Snow,Sea,Coral | 128GB | scr=6.1;ip=IP67
phone Motorola | moto g {stylus,power,play} 5G (2023) | 199 | Cosmic Black,Deep Blue | 64GB,128GB | scr=6.6;wr=false
  ;ip=None;jack=Yes;wc=No
tablet Apple | iPad (10th Generation) | 449 | Blue,Pink,Silver,Yellow | Wi-Fi 64GB,Wi-Fi 256GB,Wi-Fi + Cellular 64GB
  ,Wi-Fi + Cellular 256GB | scr=10.9;stylus_support=Apple Pencil (1st generation)
tablet Apple | iPad Air (5th Generation) | 599 | Space Gray,Starlight,Pink,Purple,Blue | Wi-Fi 64GB,Wi-Fi 256GB
  ,Wi-Fi + Cellular 64GB,Wi-Fi + Cellular 256GB | scr=10.9;stylus_support=Apple Pencil
tablet Apple | iPad mini (6th Generation) | 499 | Space Gray,Starlight,Pink,Purple | Wi-Fi 64GB,Wi-Fi 256GB
  ,Wi-Fi + Cellular 64GB,Wi-Fi + Cellular 256GB | scr=8.3;stylus_support=Apple Pencil
tablet Apple | iPad Pro (4th Generation) | 799 | Space Gray,Silver | Wi-Fi 128GB,Wi-Fi 256GB,Wi-Fi 512GB
  ,Wi-Fi + Cellular 128GB | scr=11;stylus_support=Apple Pencil
tablet Samsung | Galaxy Tab S9{,+} | 799 | Graphite,Beige | 128GB,256GB,512GB | scr=11;wr=true;os=Android 13
  ;stylus_support=S Pen
tablet Samsung | Galaxy Tab A{8,9+} | 229 | Dark Gray,Silver,Pink Gold | 32GB,64GB,128GB | scr=10.5;os=Android 13
  ;jack=Yes
tablet Amazon | Fire HD 10{, Kids Pro} (2023) | 99 | Black,Lilac,Ocean,Gray | 32GB,64GB,128GB | scr=10.1;os=Fire OS
  ;jack=Yes
tablet Lenovo | Tab M10{ Plus, HD} (3rd Gen) | 189 | Storm Grey,Frost Blue | 32GB,64GB,128GB | scr=10.6;jack=Yes
  ;os=Android 13
laptop Apple | MacBook Air~{M2,M3} chip | 999 | Midnight,Starlight,Space Gray,Silver | 8GB Memory - 256GB SSD
  ,8GB Memory - 512GB SSD,16GB Memory - 512GB SSD,24GB Memory - 1TB SSD | scr=13.6;os=macOS;hout=0;bat=18
laptop Apple | MacBook Pro~{M3,M3 Pro,M3 Max} chip | 1599 | Space Black,Silver | 8GB Memory - 512GB SSD
  ,18GB Memory - 512GB SSD,36GB Memory - 1TB SSD | scr=14.2;os=macOS;bat=22
laptop Dell | XPS 13~{Intel Core i5,Intel Core i7,Intel Core Ultra 7} | 999 | Platinum,Graphite
  | 8GB Memory - 512GB SSD,16GB Memory - 512GB SSD,32GB Memory - 1TB SSD | scr=13.4;hout=0;touch=Yes
laptop Dell | Inspiron 15~{Intel Core i5,Intel Core i7} | 549 | Carbon Black,Platinum Silver | 8GB Memory - 256GB SSD
  ,16GB Memory - 512GB SSD,16GB Memory - 1TB SSD | scr=15.6;backlit_keyboard=No
laptop HP | {Pavilion,Victus,ENVY} 15~{AMD Ryzen 5,AMD Ryzen 7,Intel Core i7} | 679 | Natural Silver,Fog Blue
  ,Mica Silver | 8GB Memory - 512GB SSD,16GB Memory - 512GB SSD,16GB Memory - 1TB SSD | scr=15.6
laptop HP | ENVY x360 2-in-1~{Intel Core i5,Intel Core i7} | 949 | Nightfall Black,Natural Silver
  | 16GB Memory - 512GB SSD,16GB Memory - 1TB SSD | scr=15.6;touch=Yes
laptop Lenovo | {IdeaPad 1,IdeaPad 3,IdeaPad Slim 5,Yoga 7i}~{Intel Core i3,Intel Core i5,Intel Core i7} | 379
  | Arctic Grey,Abyss Blue,Cloud Grey | 8GB Memory - 256GB SSD,8GB Memory - 512GB SSD,16GB Memory - 512GB SSD
  | scr=15.6;backlit_keyboard=No
laptop Microsoft | Surface Laptop {5,Go 3}~{Intel Core i5,Intel Core i7} | 799 | Platinum,Matte Black,Sage,Ice Blue
  | 8GB Memory - 256GB SSD,16GB Memory - 512GB SSD | scr=13.5;touch=Yes;hout=0
laptop/gaming ASUS | ROG Strix G16 Gaming~Intel Core i9 - NVIDIA GeForce RTX {4060,4070,4080} | 1499 | Eclipse Gray
  | 16GB Memory - 512GB SSD,16GB Memory - 1TB SSD,32GB Memory - 1TB SSD | scr=16;bat=5
laptop/gaming Acer | Nitro {5,V 15}~Intel Core i5 - NVIDIA GeForce RTX {3050,4050} | 799 | Obsidian Black
  | 8GB Memory - 512GB SSD,16GB Memory - 512GB SSD | scr=15.6;bat=6
camera/dslr Canon | EOS {Rebel T7,Rebel T8i,90D}~DSLR Camera | 479 | Black | with EF-S 18-55mm Lens,Body Only
  ,with EF-S 18-55mm and EF 75-300mm Lenses | mp=24.1;video_resolution=1080p;lens_mount=Canon EF/EF-S
camera/dslr Nikon | {D3500,D5600,D7500}~DSLR Camera | 499 | Black | with AF-P DX NIKKOR 18-55mm Lens,Body Only
  | mp=24.2;video_resolution=1080p;lens_mount=Nikon F;wifi_built_in=No
camera/mirrorless Sony | Alpha {a7 IV,a7C II,a6400,a6700}~Mirrorless Camera | 999 | Black,Silver | Body Only
  ,with FE 28-60mm Lens,with E PZ 16-50mm Lens | mp=33;lens_mount=Sony E
camera/mirrorless Canon | EOS {R50,R10,R8,R6 Mark II}~Mirrorless Camera | 679 | Black,White | Body Only
  ,with RF-S 18-45mm Lens,with RF 24-50mm Lens | mp=24.2;lens_mount=Canon RF
camera/mirrorless Nikon | {Z50,Z fc,Z5,Z6 II}~Mirrorless Camera | 859 | Black | Body Only
  ,with NIKKOR Z DX 16-50mm Lens | mp=20.9;lens_mount=Nikon Z
camera/mirrorless Fujifilm | {X-T30 II,X-S20,X-T5}~Mirrorless Camera | 899 | Black,Silver | Body Only
  ,with XC15-45mm Lens | mp=26.1;lens_mount=Fujifilm X
camera/action GoPro | HERO11 Black~5.3K Action Camera | 349 | Black | ,Accessory Bundle,Creator Edition | wr=true
  ;ip=33 feet;mp=27;video_resolution=5.3K
camera/action GoPro | HERO12 Black~5.3K Action Camera | 399 | Black | ,Accessory Bundle,Creator Edition | wr=true
  ;ip=33 feet;mp=27;video_resolution=5.3K
camera/action GoPro | HERO{10,9} Black~5K Action Camera | 249 | Black | ,Accessory Bundle | wr=true;ip=33 feet;mp=23
camera/action DJI | Osmo Action {3,4}~4K Action Camera | 329 | Gray | Standard Combo,Adventure Combo | wr=true
  ;ip=59 feet
camera/action Insta360 | {X3,X4,GO 3}~360 Action Camera | 399 | Black | Standard Bundle,Creator Bundle | wr=true
  ;ip=33 feet
camera/compact Canon | PowerShot {SX740 HS,SX70 HS,G7 X Mark III}~Digital Camera | 399 | Black,Silver | | mp=20.3
camera/compact Sony | Cyber-shot {RX100 VII,RX100 VA,HX99}~Digital Camera | 499 | Black | | mp=20.1
camera/compact Kodak | PIXPRO {FZ55,FZ45,AZ255}~Digital Camera | 99 | Black,Red,Blue,White | | mp=16.4
  ;video_resolution=1080p;wifi_built_in=No;bt=No
camera/compact OM System | Tough {TG-6,TG-7}~Waterproof Digital Camera | 499 | Red,Black | | wr=true;ip=50 feet;mp=12
tv Samsung | Q{60,70,80}{C,D} Series~QLED 4K UHD Smart Tizen TV | 500 | | 43,50,55,65,75,85 | disp=QLED;smart=Tizen
  ;apple_airplay=Yes
tv Samsung | {CU7000,CU8000,DU7200,DU8000,TU690T} Series~Crystal UHD 4K Smart Tizen TV | 380 | | 43,50,55,65,75,85
  | smart=Tizen;bt=No
tv Samsung | The Frame LS03{B,C}~QLED 4K Smart Tizen TV | 900 | | 43,50,55,65,75 | disp=QLED;smart=Tizen;hdmi=4
  ;hz=120
tv Samsung | QN{85,90}C Series~Neo QLED 4K Smart Tizen TV | 1300 | | 55,65,75,85 | disp=QLED;smart=Tizen;hdmi=4
  ;hz=120
tv Samsung | QN{800,900}C Series~Neo QLED 8K Smart Tizen TV | 2800 | | 65,75,85 | disp=QLED;smart=Tizen
  ;res=8K (4320p);hdmi=4;hz=120
tv LG | {B3,C3,G3} Series~OLED evo 4K UHD Smart webOS TV | 1300 | | 55,65,77,83 | disp=OLED;smart=webOS;hdmi=4
  ;hz=120;apple_airplay=Yes
tv LG | {UR8000,UR9000,UT8000,NANO75,NANO80,QNED80} Series~LED 4K UHD Smart webOS TV | 380 | | 43,50,55,65,75,86
  | smart=webOS
tv Sony | BRAVIA XR {A80L,A95L}~OLED 4K UHD Smart Google TV | 1600 | | 55,65,77 | disp=OLED;smart=Google TV;hdmi=4
  ;hz=120
tv Sony | {X75K,X77L,X80K,X80L,X85K,X90L} Series~4K HDR LED Smart Google TV | 550 | | 43,50,55,65,75,85
  | smart=Google TV;hdmi=4
tv TCL | {4,5,6,S4,S5}-Series~4K UHD HDR Smart Roku TV | 300 | | 43,50,55,65,75 | smart=Roku TV
tv TCL | Q{6,7,8}~QLED 4K UHD Smart Google TV | 420 | | 50,55,65,75,85 | disp=QLED;smart=Google TV
tv TCL | 3-Series~720p HD LED Smart Roku TV | 130 | | 32,40 | smart=Roku TV;res=720p;hdmi=2;high_dynamic_range=No
tv Insignia | F{30,40,50,60} Series~LED 4K UHD Smart Fire TV | 260 | | 43,50,55,58,65,70 | smart=Fire TV;bt=No
tv Insignia | F20 Series~LED HD Smart Fire TV | 110 | | 24,32,40 | smart=Fire TV;res=720p;hdmi=2
  ;high_dynamic_range=No;bt=No
tv Insignia | N10 Series~LED HD TV | 90 | | 24,32 | smart=None;res=720p;hdmi=2;high_dynamic_range=No;bt=No
tv Hisense | {U6,U7,U8} Series~Mini-LED QLED 4K UHD Smart Google TV | 700 | | 55,65,75,85,100 | disp=QLED
  ;smart=Google TV;hdmi=4;hz=144
tv VIZIO | {V,M,MQ6,MQX,P}-Series~4K UHD LED HDR Smart TV | 330 | | 43,50,55,65,70,75 | smart=SmartCast
monitor Dell | S-Series~IPS 4K UHD Monitor with HDR | 249 | Silver | 24,27,32 | res=4K (2160p);hdmi=2
monitor Dell | {P,SE,G,U}-Series~IPS FHD Monitor | 119 | Black | 22,24,27 |
monitor LG | UltraGear~QHD 165Hz Gaming Monitor | 299 | Black | 24,27,32 | res=1440p;maxhz=165;hdmi=2
monitor LG | {UltraFine,UHD}~IPS 4K UHD Monitor with USB-C | 449 | White,Black | 27,32 | res=4K (2160p)
  ;usb_c_input=Yes
monitor Samsung | Odyssey G{5,7}~Curved QHD 144Hz Gaming Monitor | 299 | Black | 27,32 | res=1440p;maxhz=144
  ;curved_screen=Yes
monitor Samsung | ViewFinity S{6,8}~IPS 4K UHD Monitor | 329 | Black | 27,32 | res=4K (2160p)
monitor HP | {M,V,X,E}-Series~IPS FHD Monitor | 149 | White,Black | 22,24,27 |
monitor Acer | Nitro~IPS QHD 170Hz Gaming Monitor | 229 | Black | 24,27,32 | res=1440p;maxhz=170
monitor BenQ | {PD,SW}-Series~IPS 4K UHD Designer Monitor | 549 | Gray | 27,32 | res=4K (2160p);usb_c_input=Yes
monitor BenQ | GW-Series~IPS FHD Eye-Care Monitor | 119 | Black | 22,24,27 | hdmi=0
projector Epson | Home Cinema {2350,3800,5050UB}~4K PRO-UHD 3LCD Projector | 1299 | White | | lum=2,800
  ;native_resolution=4K
projector Epson | EpiqVision {Mini EF12,Mini EF11,Flex CO-W01}~Smart Laser Projector | 799 | Black/Copper | | bt=Yes
projector BenQ | {HT2050A,TH685P,HT2060}~1080p DLP Home Theater Projector | 749 | White | | lum=2,200
projector BenQ | {TK860i,HT3560,TK710STi}~4K HDR Smart Home Theater Projector | 1699 | White | | native_resolution=4K
projector Optoma | {HD146X,HD28HDR,GT1080HDR}~1080p DLP Gaming Projector | 599 | White | | lum=3,600
projector Anker | Nebula {Capsule 3,Mars 3 Air,Capsule Air}~Portable Smart Projector | 399 | Gray,Black |
  | battery_powered=Yes;bat=2.5;bt=Yes;hdmi=1;lum=300
projector Samsung | The Freestyle 2nd Gen~Smart Portable Projector | 799 | White | | bt=Yes;hdmi=1;lum=230
speaker JBL | Flip {5,6}~Portable Waterproof Bluetooth Speaker | 129 | Black,Blue,Red,Teal,Gray,Squad,Pink |
  | wr=true;ip=IP67
speaker JBL | Charge 5~Portable Bluetooth Speaker | 179 | Black,Blue,Red,Gray,Teal,Squad | | wr=true;ip=IP67;bat=20
speaker JBL | {Clip 4,Go 3}~Portable Bluetooth Speaker | 49 | Black,Blue,Pink,Red,Teal | | wr=true;ip=IP67;bat=5
speaker JBL | {PartyBox 110,PartyBox Encore}~Portable Party Speaker | 399 | Black | | wr=true;ip=IPX4;bat=12
speaker Bose | SoundLink {Flex,Micro}~Portable Bluetooth Speaker | 149 | Black,Stone Blue,White Smoke,Cypress Green
  | | wr=true;ip=IP67
speaker Bose | SoundLink Revolve{+ II, II}~Portable Bluetooth Speaker | 329 | Triple Black,Luxe Silver | | wr=true
  ;ip=IP55;bat=17
speaker Sony | SRS-{XB100,XE200,XE300,XG300}~Portable Bluetooth Speaker | 59 | Black,Blue,Orange,Gray | | wr=true
  ;ip=IP67;bat=16
speaker Ultimate Ears | {BOOM 3,WONDERBOOM 3,MEGABOOM 3}~Portable Bluetooth Speaker | 149 | Night Black
  ,Ultraviolet Purple,Lagoon Blue | | wr=true;ip=IP67;bat=15
speaker Insignia | Portable Bluetooth Speaker~with {Carabiner,LED Lights} | 29 | Black,Blue,Red | | bat=6
speaker Marshall | {Emberton II,Willen,Middleton}~Portable Bluetooth Speaker | 169 | Black and Brass,Cream |
  | wr=true;ip=IP67;bat=30
speaker Sonos | {Roam 2,Move 2}~Portable Smart Speaker | 179 | Black,White,Olive | | wr=true;ip=IP67
  ;voice=Amazon Alexa
speaker/smart Apple | HomePod{ mini, (2nd generation)} | 99 | Midnight,White,Blue,Orange,Yellow | | bt=No;voice=Siri
  ;bat=Not applicable
speaker/smart Amazon | Echo {Dot (5th Gen),Pop,(4th Gen),Studio}~Smart Speaker with Alexa | 49 | Charcoal
  ,Glacier White,Deep Sea Blue | | voice=Amazon Alexa;bat=Not applicable
speaker/smart Google | Nest {Audio,Mini (2nd Gen)}~Smart Speaker | 99 | Charcoal,Chalk,Sky,Sand |
  | voice=Google Assistant;bat=Not applicable
speaker/smart Sonos | Era {100,300}~Wireless Smart Speaker | 249 | Black,White | | voice=Amazon Alexa
  ;bat=Not applicable
headphones Sony | WH-1000XM{4,5}~Wireless Noise-Canceling Over-the-Ear Headphones | 349 | Black,Silver,Midnight Blue
  ,Smoky Pink | | anc=Yes
headphones Sony | WH-CH520~Wireless On-Ear Headphones | 59 | Black,Blue,Beige,White | | fit=On-Ear;bat=50
headphones/earbuds Sony | WF-1000XM{4,5}~True Wireless Noise Cancelling Earbuds | 279 | Black,Silver | | anc=Yes
  ;fit=In-Ear;wr=true;bat=8
headphones/earbuds Sony | WF-C{500,510}~True Wireless Earbuds | 99 | Black,White,Green,Coral | | fit=In-Ear;wr=true
  ;bat=10
headphones Bose | QuietComfort {Ultra,45}~Wireless Noise Cancelling Over-the-Ear Headphones | 429 | Black,White Smoke
  ,Sandstone,Twilight Blue | | anc=Yes;bat=24
headphones/earbuds Bose | QuietComfort {Ultra Earbuds,Earbuds II}~True Wireless Noise Cancelling Earbuds | 279
  | Black,Soapstone,Eclipse Grey | | anc=Yes;fit=In-Ear;bat=6
headphones/earbuds Apple | AirPods Pro (2nd generation)~with MagSafe Case (USB-C) | 249 | White | | anc=Yes
  ;fit=In-Ear;wr=true;bat=6
headphones/earbuds Apple | AirPods ({2nd,3rd} generation)~with Charging Case | 129 | White | | fit=In-Ear;wr=true
  ;bat=6
headphones Apple | AirPods Max | 549 | Space Gray,Silver,Sky Blue,Green,Pink | | anc=Yes;bat=20
headphones Beats | Studio Pro~Wireless Noise Cancelling Over-the-Ear Headphones | 349 | Black,Sandstone,Navy
  ,Deep Brown | | anc=Yes;bat=40
headphones Beats | Solo{3,4}~Wireless On-Ear Headphones | 199 | Black,Rose Gold,Blue,Red | | fit=On-Ear;bat=40
headphones/earbuds Beats | {Powerbeats Pro,Solo Buds,Beats Flex}~True Wireless Earbuds | 199 | Black,White,Ivory
  ,Sage Gray | | fit=In-Ear;wr=true;bat=9
headphones/earbuds Samsung | Galaxy Buds{2 Pro,2,FE}~True Wireless Earbud Headphones | 229 | Graphite,White
  ,Bora Purple | | anc=Yes;fit=In-Ear;bat=5
headphones JBL | Tune {510BT,520BT,720BT}~Wireless On-Ear Headphones | 49 | Black,Blue,White,Purple | | fit=On-Ear
  ;bat=40
headphones/earbuds JBL | Tune {110,310C}~Wired In-Ear Headphones | 19 | Black,White,Blue | | fit=In-Ear;wireless=No
  ;bt=No;bat=Not applicable
headphones/earbuds Google | Pixel Buds {A-Series,Pro}~True Wireless Earbuds | 99 | Clearly White,Charcoal,Sea |
  | fit=In-Ear;wr=true;bat=5
headphones Skullcandy | {Crusher Evo,Hesh Evo}~Wireless Over-the-Ear Headphones | 149 | True Black,Chill Grey |
  | bat=40
headphones/gaming Turtle Beach | Stealth {600 Gen 2 MAX,700 Gen 2 MAX}~Wireless Gaming Headset for PS5, PS4 & PC
  | 129 | Black,White | | bat=48
headphones/gaming SteelSeries | Arctis Nova {1,7,Pro}~Gaming Headset for PC, PS5 | 99 | Black,White | | bat=38
headphones/gaming HyperX | Cloud {II,III,Alpha}~Wired Gaming Headset | 99 | Black/Red,Black | | wireless=No;bt=No
  ;bat=Not applicable
console Sony | PlayStation 5~Console | 499 | White | 825GB,825GB Marvel's Spider-Man 2 Bundle
  ,825GB Call of Duty Bundle |
console Sony | PlayStation 5 Slim~Console | 499 | White | 1TB,1TB Marvel's Spider-Man 2 Bundle |
console Sony | PlayStation 5 Digital Edition~Console | 399 | White | 825GB,825GB Fortnite Bundle | disc_drive=No
console Microsoft | Xbox Series X~Console | 499 | Black | 1TB,1TB Diablo IV Bundle | maximum_resolution=4K
console Microsoft | Xbox Series S~Console | 299 | Robot White,Carbon Black | 512GB,1TB | disc_drive=No
  ;maximum_resolution=1440p
console Nintendo | Switch OLED Model~with Joy-Con | 349 | White,Neon Red/Neon Blue | 64GB
  ,64GB Mario Kart 8 Deluxe Bundle | disc_drive=No;portable=Yes;maximum_resolution=1080p
console Nintendo | Switch~with Joy-Con | 299 | Neon Red/Neon Blue,Gray | 32GB,32GB Mario Kart 8 Deluxe Bundle
  | disc_drive=No;portable=Yes;maximum_resolution=1080p
console Nintendo | Switch Lite | 199 | Coral,Turquoise,Yellow,Gray,Blue | 32GB,32GB Animal Crossing Bundle
  | disc_drive=No;portable=Yes;maximum_resolution=720p;hout=0
watch Apple | Apple Watch Series {8,9}~Aluminum Case with Sport Band | 399 | Midnight,Starlight,Silver,Pink
  ,(PRODUCT)RED | 41mm GPS,45mm GPS,41mm GPS + Cellular,45mm GPS + Cellular | plat=iOS
watch Apple | Apple Watch SE~Aluminum Case with Sport Loop | 249 | Midnight,Starlight,Silver | 40mm GPS,44mm GPS
  ,40mm GPS + Cellular,44mm GPS + Cellular | plat=iOS
watch Apple | Apple Watch Ultra 2~Titanium Case with {Alpine Loop,Trail Loop,Ocean Band} | 799 | Natural Titanium
  | 49mm GPS + Cellular | plat=iOS;bat=36
watch Samsung | Galaxy Watch{6,6 Classic,5 Pro}~Smartwatch | 299 | Graphite,Gold,Silver,Black | 40mm,44mm,40mm LTE
  ,44mm LTE | plat=Android
watch Google | Pixel Watch{, 2}~Smartwatch | 349 | Matte Black,Polished Silver,Champagne Gold | 41mm,41mm LTE
  | plat=Android
watch Garmin | {Venu 3,Forerunner 265,fenix 7,vivoactive 5}~GPS Smartwatch | 449 | Black,Whitestone,Slate | 42mm
  ,45mm | bat=14 days
watch Fitbit | {Versa 4,Sense 2}~Fitness Smartwatch | 199 | Black,Pink Sand,Blue Mist | 40mm | bat=6 days
ereader Amazon | Kindle Paperwhite{, Signature Edition} | 149 | Black,Agave Green,Denim | 16GB,32GB |
ereader Amazon | Kindle{ (2022), Kids} | 99 | Black,Denim | 16GB | wr=false;ip=None;scr=6
ereader Amazon | Kindle Scribe | 339 | Tungsten | 16GB,32GB,64GB | wr=false;ip=None;scr=10.2
ereader Kobo | {Clara 2E,Libra 2,Sage} | 129 | Black,Deep Ocean Blue,White | 16GB,32GB | scr=6
printer HP | OfficeJet Pro {8034e,9015e,9025e,9125e}~Wireless All-In-One Inkjet Printer | 229 | White,Basalt | |
printer HP | {DeskJet 2755e,DeskJet 4155e,ENVY 6055e}~Wireless All-In-One Inkjet Printer | 84 | White,Seagrass |
  | duplex_printing=No
printer HP | LaserJet {M209dwe,M234sdwe,Pro 4001dw}~Wireless Black-and-White Laser Printer | 149 | White |
  | printer_type=Laser;color_printing=No;scanner=No
printer Canon | PIXMA {TS6420a,TS3520,G6020}~Wireless All-In-One Inkjet Printer | 99 | Black,White | |
printer Epson | EcoTank {ET-2800,ET-2850,ET-3850,ET-4850}~Wireless All-in-One Supertank Printer | 199 | Black,White
  | |
printer Brother | {HL-L2350DW,HL-L2460DW,MFC-L2750DW}~Wireless Black-and-White Laser Printer | 159 | Gray |
  | printer_type=Laser;color_printing=No;scanner=No
router NETGEAR | Nighthawk {AX5400,AX6000,AXE7800}~Wi-Fi 6 Router | 229 | Black | | usb_ports=1
router TP-Link | Archer {AX21,AX55,AX73,AXE75}~Dual-Band Wi-Fi 6 Router | 79 | Black | |
router ASUS | {RT-AX86U Pro,RT-AX58U,TUF-AX5400}~Wi-Fi 6 Gaming Router | 199 | Black | | usb_ports=1
router/mesh eero | {6+,Pro 6E,Max 7}~Mesh Wi-Fi System | 299 | White | 2-pack,3-pack | mesh_compatible=Yes
router/mesh Google | Nest Wifi Pro~Tri-Band Mesh Wi-Fi 6E System | 199 | Snow,Fog,Linen | 1-pack,2-pack,3-pack
  | mesh_compatible=Yes;wifi_standard=Wi-Fi 6E
router/mesh TP-Link | Deco {X55,XE75,X20}~Mesh Wi-Fi 6 System | 199 | White | 2-pack,3-pack | mesh_compatible=Yes
router/switch NETGEAR | GS{305,308,316}~Gigabit Ethernet Unmanaged Switch | 24 | Black | | wifi_standard=None
router/switch TP-Link | TL-SG{105,108,116}~Gigabit Ethernet Unmanaged Switch | 29 | Black | | wifi_standard=None
mp3 Apple | iPod touch (7th Generation) | 199 | Space Gray,Gold,Silver,Blue,Pink,(PRODUCT)RED | 32GB,128GB,256GB
  | bt=Yes;wifi_built_in=Yes;scr=4
mp3 Apple | iPod {nano (7th Generation),shuffle (4th Generation)} | 149 | Space Gray,Silver,Blue,Pink | 2GB,16GB
  | fm_radio=Yes;bt=Yes
mp3 SanDisk | {Clip Jam,Clip Sport Plus}~MP3 Player | 29 | Black,Blue,Pink | 8GB,16GB | fm_radio=Yes;scr=None
mp3 Sony | Walkman {NW-A306,NW-E394}~Digital Music Player | 149 | Black,Blue,Red | 8GB,32GB | bt=Yes;wifi_built_in=Yes
mp3 AGPTEK | {A02,A09X}~MP3 Player with Bluetooth | 29 | Black,Silver | 16GB,32GB | bt=Yes
"""

# Accessories. kind | type | share | default specs
ACC_KINDS_TABLE = """
case | Cases | 16 | case_type=Protective;material=Polycarbonate;drop_protection=Yes;wr=false;magsafe_compatible=No
  ;screen_protector_included=No
screen_protector | Screen Protectors | 6 | material=Tempered Glass;number_of_protectors=1;privacy_filter=No
charger | Chargers | 8 | conn=USB-C;number_of_ports=1;watts=20;wc=No;cable_included=No
power_bank | Portable Chargers | 3 | battery_capacity=10000 milliampere hours;conn=USB-C;wc=No
hdmi_cable | HDMI Cables | 6 | cable_length={opt};c1=HDMI;c2=HDMI;maxres=4K;ethernet_enabled=Yes;hdmi_standard=2.0
usb_cable | USB Cables | 4 | cable_length={opt};c1=USB-C;c2=USB-C;maximum_wattage=60;hdmi=0
lightning_cable | Lightning Cables | 3 | cable_length={opt};c1=Lightning;c2=USB-C;mfi_certified=Yes
optical_cable | Optical Audio Cables | 2 | cable_length={opt};c1=Toslink;c2=Toslink;hdmi=0
batteries | Batteries | 6 | battery_size={cellsize};number_of_batteries={pack};chem=Alkaline;rechargeable=No
  ;shelf_life=10 years
camera_battery | Camera Batteries | 2 | chem=Lithium-ion;rechargeable=Yes;battery_capacity=1040 milliampere hours
  ;voltage=7.2 volts
battery_charger | Battery Chargers | 1 | battery_size=AA, AAA;number_of_charging_bays=4;batteries_included=Yes
tv_mount | TV Mounts | 4 | tv_size_range={opt};mount_motion_type=Tilting;maximum_weight_capacity=100 pounds
action_mount | Action Camera Mounts | 2 | mount_type=Chest;wr=true
car_mount | Car Mounts | 2 | mount_type=Air Vent;magnetic=Yes;wc=No
laptop_bag | Laptop Bags | 3 | maximum_screen_size_supported=15.6 inches;bag_type=Backpack;wr=false
camera_bag | Camera Bags & Cases | 2 | bag_type=Backpack;wr=true
stand | Stands | 2 | stand_type=Laptop Stand;adjustable_height=Yes;material=Aluminum
charging_station | Controller Charging Stations | 2 | number_of_controllers=2;batteries_included=No
adapter | Adapters | 3 | c1=USB-C;c2=HDMI;maxres=4K
memory_card | Memory Cards | 5 | stor={storage};card_format=microSDXC;speed_class=UHS-I U3 V30
  ;read_speed=160 megabytes per second;adapter_included=No
controller | Controllers | 7 | cx=Wireless;bt=Yes;rechargeable_battery=Yes;vibration_feedback=Yes
computer_fan | Computer Fans | 3 | fan_size=120 millimeters;number_of_fans={pack};rgb_lighting=Yes
  ;noise_level=25 decibels
desk_fan | Fans | 1 | fan_type=Tower;oscillating=Yes;number_of_speeds=3;bt=No
keyboard | Keyboards | 3 | cx=Wired;bt=No;backlit_keys=Yes;keyboard_type=Mechanical
mouse | Mice | 3 | cx=Wired;bt=No;rechargeable_battery=No;maximum_sensitivity=8000 dots per inch
remote | Remote Controls | 2 | voice_control=No;batteries_included=Yes;bt=No
dock | Docking Stations | 2 | number_of_usb_ports=4;hout=2;thunderbolt=No;watts=85
watch_band | Watch Bands | 2 | band_material=Silicone;wr=true
lens | Camera Lenses | 2 | focal_length=50 millimeters;maximum_aperture=f/1.8;image_stabilization=No
ink | Printer Ink | 2 | ink_color=Black;page_yield=120 pages;cartridge_quantity=1
"""
# kind[/sub] brand | line ({opt}: the option) | price | colours | options | fits | specs. fits is a
# device ("dev:KIND,KIND[@Brand]": one such model per family), a group (GROUPS) or empty.
ACCESSORIES = """
case Otterbox | {Defender,Commuter,Symmetry,Symmetry Clear,Statement} Series Case | 49.99 | Black,Blue,Teal,Pink
  ,Purple,Clear | | dev:phone |
case Otterbox | {Defender,Symmetry} Series Case | 69.99 | Black,Blue | | dev:tablet |
case Otterbox | Symmetry Series Clear Case with MagSafe | 49.99 | Clear,Clear/Black | | dev:phone@Apple
  | magsafe_compatible=Yes
case Speck | {Presidio2 Pro,Presidio Perfect-Clear,Presidio2 Grip} Case | 44.99 | Black,Clear,Grey,Blue,Lavender
  ,Green | | dev:phone |
case Insignia | {Hard Shell,Hybrid,Clear,Rugged,Slim,Glitter} Case | 19.99 | Black,Clear,Navy,Pink,Red,Purple |
  | dev:phone |
case Pelican | {Protector,Voyager,Ranger,Shield} Case | 39.99 | Black,Clear,Navy | | dev:phone |
case Insignia | {Bumper,Clear Bumper} Case | 14.99 | Black,Clear,Pink,Blue | | dev:watch | case_type=Bumper
case Insignia | {Folio,Kickstand,Rugged} Case | 29.99 | Black,Navy,Pink | | dev:tablet,ereader | case_type=Folio
case ZAGG | Gear4 {Crystal Palace,Denali,Havana,Milan} Case | 39.99 | Black,Clear,Iridescent,Blue | | dev:phone |
case Case-Mate | {Tough Clear,Tough Black,Twinkle,Soap Bubble} Case | 39.99 | Clear,Black,Multi | | dev:phone |
case Apple | {Silicone,Clear,FineWoven} Case with MagSafe | 49 | Midnight,Storm Blue,Clay,Cypress,Clear |
  | dev:phone@Apple | material=Silicone;magsafe_compatible=Yes
case Apple | Smart Folio | 79 | Charcoal Gray,White,Marine Blue,Sky | | dev:tablet@Apple | case_type=Folio
case Samsung | {Silicone,Clear,Leather,Standing Grip} Case | 29.99 | Black,Lavender,Cream,Clear |
  | dev:phone@Samsung | material=Silicone
case Samsung | {Book,Smart Book,Keyboard} Cover | 69.99 | Black,Beige | | dev:tablet@Samsung | case_type=Folio
case/keyboard Logitech | {Combo Touch,Slim Folio} Keyboard Case | 199.99 | Oxford Gray,Sand | | dev:tablet@Apple
  | case_type=Keyboard Folio;bt=No
case Amazon | {Fabric,Leather,Water-Safe Fabric} Cover | 29.99 | Black,Agave Green,Denim | | dev:ereader@Amazon |
case Insignia | {Carrying,Travel,Hard Shell} Case | 19.99 | Black,Red,Gray | | grp:switch | case_type=Carrying
case Otterbox | {Soft Touch,Lumen Series} Case | 29.99 | Black,Blue,Clear | | grp:airpods |
screen_protector ZAGG | InvisibleShield {Glass Elite,Glass XTR3,Fusion,Ultra Clear+} Screen Protector | 39.99 | |
  | dev:phone,tablet |
screen_protector Insignia | {Tempered Glass,Privacy Glass,Matte} Screen Protector (2-Pack) | 24.99 | | | dev:phone
  ,watch,tablet | number_of_protectors=2
screen_protector Belkin | ScreenForce {UltraGlass 2,Pro TemperedGlass,Privacy} Screen Protector | 44.99 | |
  | dev:phone |
screen_protector Insignia | Tempered Glass Screen Protector | 14.99 | | | grp:switch |
charger Anker | {Nano,Nano 3,313,511} {opt} USB-C Charger | 19.99 | White,Black,Blue,Purple | 20W,30W,45W | |
charger Anker | {735,737,747} Charger (GaN) 3-Port USB-C | 49.99 | Black,White | 65W,100W,150W | grp:laptops
  | number_of_ports=3
charger Belkin | BoostCharge {opt} USB-C PD Wall Charger | 24.99 | Black,White,Blue,Pink | 20W,30W,65W | |
charger Apple | {opt} USB-C Power Adapter | 19 | White | 20W,30W,35W Dual,70W,140W | grp:apple_usbc |
charger/wireless Apple | MagSafe Charger ({1 m,2 m}) | 39 | White | | grp:iphone | conn=MagSafe;wc=Yes;watts=15
charger Samsung | {25W,45W} Super Fast Charging USB-C Wall Charger | 19.99 | Black,White | | grp:galaxy | watts=25
charger/wireless Belkin | BoostCharge Pro {2-in-1,3-in-1} Wireless Charging {Pad,Stand} with MagSafe | 99.99 | Black
  ,White | | grp:iphone | conn=MagSafe;wc=Yes;number_of_ports=3
charger Insignia | {20W,35W Dual,65W} USB-C Wall Charger | 19.99 | White,Black | | |
charger Insignia | {5W,12W,24W Dual} USB Wall Charger | 14.99 | Black,White | | | conn=USB Type A;watts=12
charger Insignia | 12W Wall Charger with {3',6'} Lightning Cable | 24.99 | White,Black | | grp:lightning
  | conn=Lightning;cable_included=Yes;watts=12
charger/wireless mophie | {15W,snap+ 15W,3-in-1 travel} Wireless Charging Pad | 39.99 | Black,White | |
  | conn=Qi Wireless;wc=Yes;watts=15
power_bank Anker | PowerCore {10000,20000,26800} Portable Charger | 29.99 | Black,Blue,White | | |
power_bank {mophie,Belkin,Insignia} | {10000,20000}mAh Portable Charger | 39.99 | Black,White | | | conn=USB Type A
hdmi_cable {Insignia,Dynex,Rocketfish} | {opt} {High-Speed,4K UltraHD} HDMI Cable | 12.99 | Black,White,Gray | 3',4'
  ,6',8',10',12',15',25' | |
hdmi_cable {Rocketfish,Belkin,Monster} | {opt} 8K Ultra High Speed HDMI 2.1 Cable | 39.99 | Black,Gray,White | 3',4'
  ,6',8',10' | | maxres=8K;hdmi_standard=2.1
hdmi_cable Insignia | {opt} In-Wall HDMI Cable | 49.99 | Black | 25',35',50' | |
usb_cable {Anker,Belkin,Insignia} | {opt} USB-C to USB-C Cable ({60W,100W,240W}) | 16.99 | Black,White | 3',6',10'
  | |
usb_cable Apple | {60W,240W} USB-C Charge Cable ({1 m,2 m}) | 19 | White | | grp:apple_usbc
  | maximum_wattage=240 watts
usb_cable {Anker,Insignia} | {opt} USB-A to USB-C Charge-and-Sync Cable | 14.99 | Black,White,Blue | 3',6',10' |
  | c1=USB Type A
usb_cable Samsung | {opt} USB-C to USB-C Cable | 19.99 | Black,White | 3',6' | grp:galaxy |
lightning_cable Apple | USB-C to Lightning Cable ({opt}) | 19 | White | 1 m,2 m | grp:lightning |
lightning_cable {Belkin,Anker} | {opt} USB-C Cable with Lightning Connector | 24.99 | Black,White,Pink | 3',6',10'
  | grp:lightning |
lightning_cable Insignia | {opt} Lightning to USB-A Charge-and-Sync Cable | 19.99 | White,Black | 3',6',10'
  | grp:lightning | c2=USB Type A;mfi_certified=No
optical_cable {Insignia,Rocketfish,Monster,Dynex} | {opt} Digital Optical Audio Cable | 14.99 | Black,White | 3',6'
  ,12',25' | |
batteries {Energizer,Duracell,Insignia} | {MAX,Coppertop,Alkaline} {opt} | 9.99 | | AA Batteries (4-Pack)
  ,AA Batteries (8-Pack),AA Batteries (16-Pack),AA Batteries (24-Pack),AAA Batteries (8-Pack),AAA Batteries (16-Pack)
  ,C Batteries (4-Pack),D Batteries (4-Pack),9V Batteries (2-Pack) | |
batteries {Energizer,Duracell} | {Ultimate Lithium,Optimum} {opt} | 12.99 | | AA Batteries (4-Pack)
  ,AA Batteries (8-Pack),AAA Batteries (4-Pack) | | chem=Lithium;shelf_life=25 years
batteries {Energizer,Duracell,Panasonic} | {Recharge,Rechargeable,eneloop} {opt} | 14.99 | | AA Batteries (4-Pack)
  ,AAA Batteries (4-Pack),AA Batteries (8-Pack) | | chem=NiMH;rechargeable=Yes
camera_battery Canon | LP-E{17,6NH,10} Battery Pack | 59.99 | Black | | grp:canon_cam |
camera_battery Nikon | EN-EL{15c,14a,25} Rechargeable Li-ion Battery | 49.99 | Black | | grp:nikon_cam |
camera_battery Sony | NP-{FZ100,FW50} Rechargeable Battery Pack | 79.99 | Black | | grp:sony_alpha |
camera_battery GoPro | Enduro Rechargeable Battery{, (2-Pack)} | 24.99 | Black | | grp:gopro
  | battery_capacity=1720 milliampere hours;voltage=3.85 volts
camera_battery Wasabi Power | Battery {(2-Pack) and Dual Charger,(3-Pack) and Triple Charger} | 29.99 | Black |
  | grp:gopro |
battery_charger {Energizer,Duracell} | {Recharge Pro,Ion Speed 1000} Charger with 4 AA Rechargeable Batteries
  | 24.99 | Black | | |
battery_charger GoPro | Dual Battery Charger + Enduro Battery | 49.99 | Black | | grp:gopro
  | battery_size=Not applicable;number_of_charging_bays=2
tv_mount {Sanus,Insignia,Rocketfish,Kanto} | {Full-Motion,Tilting,Fixed} TV Wall Mount for Most {opt} TVs | 79.99
  | Black | 19"-39",32"-55",40"-70",42"-90" | grp:tv | mount_motion_type=Tilting
action_mount GoPro | {Chesty (Performance Chest Mount),Handler (Floating Hand Grip),Head Strap 2.0,3-Way 2.0
  ,Suction Cup Mount,Jaws Flex Clamp,Shorty} | 29.99 | Black,Orange | | grp:gopro |
action_mount Insignia | Action Camera {Accessory Kit (20 pieces),Chest Mount,Bike Mount} | 19.99 | Black |
  | grp:gopro | mount_type=Multiple
car_mount iOttie | {Easy One Touch 5,Velox Pro,Auto Sense} Car Mount | 24.99 | Black | | grp:phones | magnetic=No
car_mount {Belkin,Insignia} | Magnetic Car Vent Mount{ PRO,} with MagSafe | 39.99 | Black,Gray | | grp:iphone |
laptop_bag Targus | {Classic,CityLite,Groove X2} Backpack for {opt} Laptops | 39.99 | Black,Gray | 15.6",16"
  | grp:laptops |
laptop_bag Incase | {Icon,City,Compass} Backpack | 149.99 | Black,Heather Gray,Navy | | grp:laptops | wr=true
laptop_bag Insignia | Laptop Sleeve for {opt} Laptops | 19.99 | Black,Gray,Blue | 13",14",15.6" | grp:laptops
  | bag_type=Sleeve
laptop_bag Incase | Compact Sleeve{, in Woolenex} | 49.99 | Black,Navy,Graphite | | grp:macbook | bag_type=Sleeve
camera_bag Peak Design | Everyday {Backpack 20L,Backpack 30L,Sling 6L,Messenger 13L} | 279.95 | Black,Ash,Midnight
  | | grp:cameras |
camera_bag {Lowepro,Insignia,Insignia} | {Adventura SH 140 III Shoulder,Camera Sling,DSLR Backpack} Bag | 39.99
  | Black,Gray | | grp:cameras | bag_type=Shoulder Bag;wr=false
camera_bag GoPro | Casey {(Camera + Mounts + Accessories Case),LITE} | 49.99 | Black | | grp:gopro | bag_type=Case
stand {Rain Design,Insignia,Satechi} | {mStand,Adjustable,Foldable} Laptop Stand | 49.99 | Silver,Space Gray |
  | grp:laptops |
stand {Satechi,Insignia} | Aluminum {Headphone Stand,Tablet Stand} | 29.99 | Space Gray,Silver | |
  | stand_type=Accessory Stand
charging_station Sony | DualSense Charging Station | 29.99 | White | | grp:ps5 |
charging_station {PowerA,Insignia} | Dual Charging Station | 24.99 | Black,White | | grp:ps5 |
charging_station {PowerA,Insignia} | Dual Controller Charging Station | 24.99 | Black,White | | grp:xbox |
adapter {Insignia,Belkin,Anker} | USB-C to HDMI Adapter{, (4K 60Hz)} | 24.99 | Black,Gray | | |
adapter Apple | USB-C Digital AV Multiport Adapter | 69 | White | | grp:apple_usbc |
adapter Apple | Lightning to 3.5 mm Headphone Jack Adapter | 9 | White | | grp:lightning | c1=Lightning;c2=3.5mm
  ;maxres=None
adapter Apple | Lightning Digital AV Adapter | 49 | White | | grp:lightning | c1=Lightning;maxres=1080p
adapter {Anker,Insignia} | USB-C to USB Adapter{, (2-Pack)} | 9.99 | Gray,Black | | | c2=USB Type A;maxres=None
memory_card SanDisk | {Extreme PLUS,Extreme PRO,Ultra} {opt} SDXC UHS-I Memory Card | 24.99 | | 64GB,128GB,256GB
  ,512GB | | card_format=SDXC
memory_card SanDisk | {Extreme,Ultra} {opt} microSDXC UHS-I Memory Card | 21.99 | | 64GB,128GB,256GB,512GB,1TB |
  | adapter_included=Yes
memory_card SanDisk | {opt} microSDXC UHS-I Memory Card | 29.99 | | 128GB,256GB,512GB | grp:switch |
memory_card Samsung | {EVO Select,PRO Plus} {opt} microSDXC UHS-I Memory Card with Adapter | 17.99 | | 64GB,128GB
  ,256GB,512GB | | adapter_included=Yes
memory_card {Lexar,PNY} | {Professional 1800x,Elite-X} {opt} SDXC Memory Card | 49.99 | | 64GB,128GB,256GB |
  | card_format=SDXC
controller Sony | DualSense Wireless Controller | 74.99 | White,Midnight Black,Cosmic Red,Nova Pink,Starlight Blue
  ,Galactic Purple,Gray Camouflage,Volcanic Red,Sterling Silver | | grp:ps5 |
controller Sony | DualSense Edge Wireless Controller | 199.99 | White | | grp:ps5 |
controller Microsoft | Xbox {Wireless,Elite Series 2,Elite Series 2 Core} Controller | 59.99 | Carbon Black
  ,Robot White,Shock Blue,Pulse Red,Electric Volt,Deep Pink | | grp:xbox | rechargeable_battery=No
controller Nintendo | Pro Controller | 69.99 | Black,Zelda Tears of the Kingdom Edition,Splatoon 3 Edition |
  | grp:switch |
controller Nintendo | Joy-Con (L/R) | 79.99 | Neon Red/Neon Blue,Pastel Purple/Pastel Green,Gray,Neon Yellow |
  | grp:switch |
controller PowerA | {Enhanced Wireless,Nano Wireless,Fusion Pro} Controller | 49.99 | Black,Mario Pop Art,Zelda
  ,Pikachu,Kirby,Metroid | | grp:switch |
controller {PowerA,PDP,PDP} | {Enhanced Wired,Afterglow Wave Wired,Rematch Wired} Controller | 34.99 | Black,White
  ,Blue,Red,Green | | grp:xbox | cx=Wired;bt=No;rechargeable_battery=No
controller 8BitDo | {Pro 2,Ultimate,SN30 Pro} Bluetooth Controller | 49.99 | Gray,Black,White,Purple | | grp:switch |
controller {Razer,Victrix} | {Wolverine V2 Pro,Pro BFG} Wireless Controller | 179.99 | Black,White | | grp:ps5 |
computer_fan {CORSAIR,NZXT,Lian Li} | {iCUE SP120 RGB ELITE,F120 RGB Core,UNI FAN SL120 V2} 120mm Case Fans {opt}
  | 59.99 | Black,White | (Single),(3-Pack) | |
computer_fan {Noctua,ARCTIC,Cooler Master} | {NF-A12x25,P12 PWM PST,SickleFlow 120} 120mm Computer Fan{, (5-Pack)}
  | 24.99 | Black,Brown,White | | | rgb_lighting=No
computer_fan/cooler {Cooler Master,Noctua,CORSAIR} | {Hyper 212 Black Edition,NH-D15,iCUE H100i ELITE} CPU Cooler
  | 44.99 | Black | | | rgb_lighting=No
desk_fan {Dyson,Lasko,Insignia} | {Purifier Cool Tower Fan,Wind Curve Tower Fan,6" USB Desk Fan} | 79.99 | White
  ,Black | | |
keyboard Logitech | {MX Keys S,K380 Multi-Device,Pebble Keys 2 K380s} Wireless Keyboard | 49.99 | Graphite,Pale Gray
  ,Rose,Blue | | | cx=Bluetooth;bt=Yes;keyboard_type=Scissor
keyboard Apple | Magic Keyboard{ with Touch ID, with Touch ID and Numeric Keypad} | 149 | White,Black |
  | grp:macbook | cx=Bluetooth;bt=Yes;backlit_keys=No;keyboard_type=Scissor
keyboard {CORSAIR,Razer,Logitech} | {K70 RGB PRO,BlackWidow V4,G413 SE} Wired Mechanical Gaming Keyboard | 129.99
  | Black,White | | |
keyboard/combo Logitech | {MK270,MK540,MK345} Wireless Keyboard and Mouse Combo | 29.99 | Black | |
  | cx=2.4GHz Wireless;backlit_keys=No;keyboard_type=Membrane
mouse Logitech | {MX Master 3S,MX Anywhere 3S,Pebble 2 M350s} Wireless Mouse | 99.99 | Graphite,Pale Gray,Rose |
  | | cx=Bluetooth, 2.4GHz Wireless;bt=Yes;rechargeable_battery=Yes
mouse {Logitech,Logitech,Insignia} | {M185,M325s,Compact} Wireless Mouse | 14.99 | Gray,Blue,Red,Black | |
  | cx=2.4GHz Wireless
mouse/gaming {Logitech,Razer,CORSAIR} | {G502 HERO,DeathAdder V3,M65 RGB ULTRA} Wired Gaming Mouse | 49.99 | Black
  ,White | | | maximum_sensitivity=25600 dots per inch
mouse Apple | Magic Mouse | 79 | White,Black | | grp:macbook | cx=Bluetooth;bt=Yes;rechargeable_battery=Yes
mouse Microsoft | {Bluetooth,Modern Mobile,Arc} Mouse | 24.99 | Black,Pastel Blue,Glacier | | | cx=Bluetooth;bt=Yes
mouse Insignia | Wired Optical Mouse | 9.99 | Black,White | | |
remote Samsung | Replacement Remote | 19.99 | Black | | grp:samsung_tv |
remote {GE,One For All,Insignia} | {4-Device,3-Device,Streaming} Universal Remote | 14.99 | Black | | grp:tv
  | number_of_devices_controlled=4
remote Amazon | Alexa Voice Remote{ Pro, (3rd Gen)} | 34.99 | Black | | grp:fire_tv | voice_control=Yes;bt=Yes
dock {CalDigit,Anker,Belkin} | {TS4 Thunderbolt 4,777 Thunderbolt,Connect Pro Thunderbolt 4} Dock | 249.99
  | Space Gray,Black | | grp:laptops | thunderbolt=Yes
dock Dell | {WD19S,WD22TB4} USB-C Dock | 229.99 | Black | | grp:dell_laptop |
dock Nintendo | Switch Dock Set | 89.99 | Black | | grp:switch | hout=1;number_of_usb_ports=3
watch_band Apple | {opt} {Sport Band,Sport Loop,Solo Loop,Braided Solo Loop} | 49 | Midnight,Starlight,(PRODUCT)RED
  ,Clover,Storm Blue | 41mm,45mm | grp:apple_watch |
watch_band Insignia | {Silicone,Nylon,Stainless Steel} Band | 19.99 | Black,Navy,Pink | | grp:apple_watch |
watch_band Samsung | {Sport,Fabric,Hybrid Leather} Band | 49.99 | Graphite,Silver | | grp:galaxy_watch |
lens Canon | {EF 50mm f/1.8 STM,EF-S 10-18mm,EF 75-300mm} Lens | 125 | Black | | grp:canon_cam |
lens Sony | {FE 50mm F1.8,E 18-135mm,FE 85mm F1.8} Lens | 248 | Black | | grp:sony_alpha |
lens Nikon | NIKKOR Z {40mm f/2,DX 50-250mm,24-200mm} Lens | 299.95 | Black | | grp:nikon_cam |
ink HP | {67,67XL,962,962XL,64} Ink Cartridge | 19.99 | Black,Tri-Color | | grp:hp_printer |
ink Epson | EcoTank {502,522} Ink Bottle | 19.99 | Black,Cyan,Magenta,Yellow | | grp:epson_printer | page_yield=7
  ,500 pages
ink Canon | {PG-275,CL-276,PG-245} Ink Cartridge | 24.99 | Black,Color | | grp:canon_printer |
"""


def _is(kind: str, brand: str | None = None) -> Callable[[dict], bool]:
    return lambda d: d["kind"] == kind and brand in (None, d["brand"])


def _starts(prefix: str) -> Callable[[dict], bool]:
    return lambda d: d["short"].startswith(prefix)


# Device groups an accessory line fits: name -> (title text, which device models, their brand)
GROUPS: dict[str, tuple[str, Callable[[dict], bool], str]] = {
    "switch": ("Nintendo Switch", _is("console", "Nintendo"), "Nintendo"),
    "ps5": ("PlayStation 5", _starts("PlayStation 5"), "Sony"),
    "xbox": ("Xbox Series X|S", _starts("Xbox"), "Microsoft"),
    "gopro": ("GoPro HERO cameras", _is("camera", "GoPro"), "GoPro"),
    "airpods": ("Apple AirPods Pro (2nd generation)", _starts("AirPods Pro"), "Apple"),
    "iphone": ("MagSafe iPhones", _is("phone", "Apple"), "Apple"),
    "lightning": ("Apple iPhone", lambda d: d["specs"].get("connector_type") == "Lightning",
                  "Apple"),
    "apple_usbc": ("Apple MacBook and iPad",
                   lambda d: d["brand"] == "Apple" and d["kind"] in ("laptop", "tablet"), "Apple"),
    "galaxy": ("Samsung Galaxy",
               lambda d: d["brand"] == "Samsung" and d["kind"] in ("phone", "tablet"), "Samsung"),
    "phones": ("Most Smartphones", _is("phone"), "Universal"),
    "apple_watch": ("Apple Watch", _is("watch", "Apple"), "Apple"),
    "galaxy_watch": ("Samsung Galaxy Watch", _is("watch", "Samsung"), "Samsung"),
    "nikon_cam": ("Nikon cameras", _is("camera", "Nikon"), "Nikon"),
    "canon_cam": ("Canon EOS DSLR cameras", lambda d: d["brand"] == "Canon" and d["sub"] == "dslr",
                  "Canon"),
    "sony_alpha": ("Sony Alpha cameras",
                   lambda d: d["brand"] == "Sony" and d["sub"] == "mirrorless", "Sony"),
    "cameras": ("DSLR and Mirrorless Cameras", lambda d: d["sub"] in ("dslr", "mirrorless"),
                "Universal"),
    "tv": ("", _is("tv"), "Universal"),
    "samsung_tv": ("Samsung Smart TVs", _is("tv", "Samsung"), "Samsung"),
    "fire_tv": ("Fire TV Edition TVs", lambda d: d["specs"].get("smart_platform") == "Fire TV",
                "Amazon"),
    "laptops": ("", _is("laptop"), "Universal"),
    "macbook": ("Apple MacBook", _is("laptop", "Apple"), "Apple"),
    "dell_laptop": ("Dell laptops", _is("laptop", "Dell"), "Dell"),
    "hp_printer": ("HP printers", _is("printer", "HP"), "HP"),
    "epson_printer": ("Epson EcoTank printers", _is("printer", "Epson"), "Epson"),
    "canon_printer": ("Canon PIXMA printers", _is("printer", "Canon"), "Canon"),
}


def _expand(row: str) -> list[tuple[str, int]]:
    """A row per choice of its brace groups, with the sum of the chosen positions."""
    groups = list(re.finditer(r"\{([^{}]*,[^{}]*)\}", row))
    sizes = sorted({len(g[1].split(",")) for g in groups})
    out = []
    for pick in itertools.product(*(range(n) for n in sizes)):
        s = row
        for g in reversed(groups):
            alts = g[1].split(",")
            s = s[: g.start()] + alts[pick[sizes.index(len(alts))]] + s[g.end():]
        out.append((s, sum(pick)))
    return out


def _table(text: str) -> list[list[str]]:
    rows: list[str] = []
    for line in text.strip("\n").splitlines():
        if line.startswith(" ") and rows:  # a continuation: "| field", ";spec" or ",item"
            rows[-1] += (" " if line.lstrip().startswith("|") else "") + line.strip()
        elif line.strip():
            rows.append(line.strip())
    return [[f.strip() for f in r.split("|")] + [str(k)] for row in rows for r, k in _expand(row)]


def _specs(text: str) -> dict[str, str]:
    pairs = [p.split("=", 1) for p in text.split(";") if p.strip()]
    return {ALIAS.get(k.strip(), k.strip()): v for k, v in pairs}


def _unit(k: str, v: str) -> str:
    return f"{v} {UNITS[k]}" if k in UNITS and re.fullmatch(r"[\d.,]+", v) else v


def _split(text: str, keep_empty: bool = False) -> list[str]:
    return [s.strip() for s in text.split(",") if keep_empty or s.strip()] if text.strip() else []


KINDS = {r[0]: {"type": r[1], "noun": r[2], "share": float(r[3]), "title": r[4],
                "show": r[5] == "y", "specs": _specs(r[6])} for r in _table(KINDS_TABLE)}
_NOUN = {"hdmi_cable": "HDMI cable", "usb_cable": "USB cable", "batteries": "battery pack",
         "tv_mount": "TV mount", "ink": "ink cartridge", "desk_fan": "fan",
         "computer_fan": "cooling fan"}
ACC_KINDS = {r[0]: {"type": r[1], "noun": _NOUN.get(r[0], r[0].replace("_", " ")),
                    "share": float(r[2]), "specs": _specs(r[3])} for r in _table(ACC_KINDS_TABLE)}


def _models(text: str, kinds: dict) -> list[dict]:
    out = []
    for r in _table(text):
        head, brand = r[0].split(" ", 1)
        kind, _, sub = head.partition("/")
        short, _, desc = r[1].partition("~")
        out.append({"kind": kind, "sub": sub, "brand": brand, "short": short, "desc": desc,
                    "price": float(r[2]) * (1 + 0.12 * int(r[-1])), "colours": _split(r[3]),
                    "options": _split(r[4], True), "fits": r[5] if kinds is ACC_KINDS else "",
                    "specs": {**kinds[kind]["specs"], **_specs(r[-2])}})
    return out


DEVICE_MODELS = _models(DEVICES, KINDS)
ACCESSORY_LINES = _models(ACCESSORIES, ACC_KINDS)

# --------------------------------------------------------------------------------------------
# Ground truth: per-intent rules over an item's hidden record; the first rule that holds wins.
# --------------------------------------------------------------------------------------------


class P:
    """A predicate on an item's record, composable with &, | and ~."""

    def __init__(self, f: Callable[[dict], bool]):
        self.f = f

    def __call__(self, r: dict) -> bool:
        return self.f(r)

    def __and__(self, o: P) -> P:
        return P(lambda r: self.f(r) and o.f(r))

    def __or__(self, o: P) -> P:
        return P(lambda r: self.f(r) or o.f(r))

    def __invert__(self) -> P:
        return P(lambda r: not self.f(r))


DEV = P(lambda r: r["role"] == "device")
ACC = ~DEV


def K(*kinds: str) -> P: return P(lambda r: r["kind"] in kinds)
def SUB(*subs: str) -> P: return P(lambda r: r["sub"] in subs)
def B(*brands: str) -> P: return P(lambda r: r["brand"] in brands)
def CB(*brands: str) -> P: return P(lambda r: r["cbrand"] in brands)  # fits brand's devices
def M(*prefixes: str) -> P: return P(lambda r: r["short"].startswith(prefixes))  # model/line
def MX(name: str) -> P: return P(lambda r: r["short"] == name)
def FITS(*pre: str) -> P: return P(lambda r: any(c.startswith(pre) for c in r["compat"]))
def FITX(name: str) -> P: return P(lambda r: name in r["compat"])
def FK(*kinds: str) -> P: return P(lambda r: any(k in kinds for k in r["ckinds"]))  # fits kind
def SP(key: str, *values: str) -> P: return P(lambda r: r["specs"].get(key) in values)


def NUM(key: str, lo: float, hi: float) -> P:
    def f(r: dict) -> bool:
        m = re.match(r"[\d.]+", r["specs"].get(key, ""))
        return bool(m) and lo <= float(m.group()) <= hi
    return P(f)


Rules = tuple[tuple[P, int], ...]


def I(phrasings: str, *rules: tuple[P, int]) -> tuple[list[str], Rules]:  # noqa: E743
    return phrasings.split(";"), rules


BRAND_QUERIES: dict[str, str] = {}  # brand-only query -> brand


def BR(phrasings: str, brand: str, acc: int = 2) -> tuple[list[str], Rules]:
    """A brand query: its devices 3, its accessories `acc`, accessories merely compatible 1."""
    BRAND_QUERIES.update(dict.fromkeys(phrasings.split(";"), brand))
    return I(phrasings, (B(brand) & DEV, 3), (B(brand), acc), (CB(brand), 1))


HP, EARB = K("headphones"), K("headphones") & SUB("earbuds")
TV, PHONE, CONSOLE, CASE, CAM = K("tv"), K("phone"), K("console"), K("case"), K("camera")
CTRL = K("controller")
NC, BT = SP("active_noise_cancelling", "Yes"), SP("bluetooth_enabled", "Yes")
HDMI_AD = K("adapter") & SP("connector_type_2", "HDMI")
CABLES = K("usb_cable", "lightning_cable", "optical_cable", "hdmi_cable")
SPK, LAP, MON, PROJ, BATT = K("speaker"), K("laptop"), K("monitor"), K("projector"), K("batteries")
# Brand only; one-word device; two-word product; brand + kind; attribute + kind; model names.
INTENTS: list[tuple[list[str], Rules]] = [
    BR("apple;apple products", "Apple"), BR("samsung", "Samsung"), BR("sony;sony products", "Sony"),
    BR("bose", "Bose"), BR("canon", "Canon"), BR("nintendo", "Nintendo"),
    BR("gopro;go pro", "GoPro"), BR("lg", "LG"), BR("jbl", "JBL"), BR("google", "Google"),
    BR("beats;beats by dre", "Beats"),
    BR("microsoft", "Microsoft"), BR("otterbox;otter box", "Otterbox", 3),
    BR("logitech", "Logitech", 3), BR("insignia", "Insignia"), BR("energizer", "Energizer", 3),
    BR("sandisk", "SanDisk", 3),
    I("ipad;ipads;apple ipad", (K("tablet") & M("iPad"), 3), (K("tablet"), 1),
      (ACC & FITS("iPad"), 1)),
    I("iphone;iphones;apple iphone", (PHONE & M("iPhone"), 3), (PHONE, 1),
      (ACC & FITS("iPhone"), 1)),
    I("camera;cameras;digital camera", (CAM & ~SUB("action"), 3), (CAM, 2),
      (ACC & FK("camera"), 1)),
    I("tv;tvs;television;televisions", (TV, 3), (ACC & FK("tv"), 1)),
    I("smart tv;smart tvs", (TV & ~SP("smart_platform", "None"), 3), (TV, 2), (ACC & FK("tv"), 1)),
    I("monitor;monitors;computer monitor", (MON, 3)),
    I("projector;projectors;home theater projector", (PROJ, 3)),
    I("laptop;laptops;notebook computer", (LAP, 3), (ACC & FK("laptop"), 1)),
    I("headphones;headphone", (HP & ~SUB("earbuds"), 3), (HP, 2), (ACC & FK("headphones"), 1)),
    I("earbuds;earphones", (EARB, 3), (HP, 1), (ACC & FK("headphones"), 1)),
    I("wireless earbuds;bluetooth earbuds", (EARB & SP("wireless", "Yes"), 3), (EARB, 2), (HP, 1)),
    I("ipod;ipods", (K("mp3") & B("Apple"), 3), (K("mp3"), 1)),
    I("mp3 player;mp3 players", (K("mp3"), 3)),
    I("batteries;battery", (BATT, 3), (K("camera_battery"), 2),
      (K("battery_charger", "power_bank"), 1)),
    I("aa batteries;aa battery;double a batteries", (BATT & SP("battery_size", "AA"), 3),
      (K("batteries", "battery_charger"), 1)),
    I("rechargeable batteries", (BATT & SP("rechargeable", "Yes"), 3), (K("battery_charger"), 2),
      (K("batteries", "camera_battery"), 1)),
    I("speaker;speakers", (SPK, 3)),
    I("smartwatch;smart watch;smartwatches", (K("watch"), 3), (K("watch_band"), 1)),
    I("kindle;amazon kindle", (K("ereader") & B("Amazon"), 3), (K("ereader"), 2),
      (ACC & FK("ereader"), 1)),
    I("e reader;ereader", (K("ereader"), 3), (K("tablet"), 1)),
    I("printer;printers;wireless printer", (K("printer"), 3), (K("ink"), 1)),
    I("router;wifi router;wireless router", (K("router") & ~SUB("switch"), 3), (K("router"), 1)),
    I("game console;gaming console", (CONSOLE, 3), (CTRL, 1)),
    I("xbox;xbox series x", (CONSOLE & M("Xbox"), 3), (ACC & FITS("Xbox"), 1)),
    I("ps5;playstation 5;playstation", (CONSOLE & M("PlayStation 5"), 3),
      (ACC & FITS("PlayStation 5"), 1)),
    I("switch;nintendo switch", (CONSOLE & B("Nintendo"), 3), (ACC & FITS("Switch"), 1)),
    I("switch oled;nintendo switch oled", (DEV & M("Switch OLED"), 3), (CONSOLE & B("Nintendo"), 2),
      (ACC & FITS("Switch"), 1)),
    I("hdmi cable;hdmi cables;hdmi cord", (K("hdmi_cable"), 3), (HDMI_AD, 2), (CABLES, 1)),
    I("4k hdmi cable", (K("hdmi_cable") & SP("maximum_resolution", "4K", "8K"), 3),
      (K("hdmi_cable"), 2), (HDMI_AD, 1)),
    I("bluetooth speaker;bluetooth speakers;wireless speaker;portable speaker",
      (SPK & ~SUB("smart") & BT, 3), (SPK & BT, 2), (SPK, 1)),
    I("waterproof speaker;waterproof bluetooth speaker;outdoor speaker",
      (SPK & SP("water_resistance_rating", "IP67", "IPX7"), 3),
      (SPK & SP("water_resistance_rating", "IP55", "IPX4"), 2), (SPK, 1)),
    I("smart speaker;smart speakers", (SPK & SUB("smart"), 3), (SPK, 1)),
    I("computer fan;computer fans;case fan;pc fan", (K("computer_fan") & ~SUB("cooler"), 3),
      (K("computer_fan"), 2), (K("desk_fan"), 1)),
    I("pro controller;switch pro controller;nintendo pro controller",
      (B("Nintendo") & M("Pro Controller"), 3),
      (CTRL & FITS("Switch") & SP("connectivity", "Wireless"), 2), (CTRL, 1)),
    I("usb c charger;usb-c charger;usb c wall charger",
      (K("charger") & SP("connector_type", "USB-C"), 3),
      (K("power_bank") & SP("connector_type", "USB-C"), 2),
      (K("charger", "power_bank", "usb_cable"), 1)),
    I("wireless charger;wireless charging pad",
      (K("charger", "power_bank") & SP("wireless_charging", "Yes"), 3), (K("charger"), 1)),
    I("iphone case;iphone cases;iphone cover", (CASE & FITS("iPhone"), 3), (CASE & FK("phone"), 1),
      (K("screen_protector") & FITS("iPhone"), 1)),
    I("iphone 14 case;case for iphone 14", (CASE & FITX("iPhone 14"), 3),
      (CASE & FITS("iPhone"), 1), (ACC & FITX("iPhone 14"), 1)),
    I("ipad case;ipad cases;ipad cover", (CASE & FITS("iPad") & ~SUB("keyboard"), 3),
      (CASE & FITS("iPad"), 2), (CASE & FK("tablet"), 1), (ACC & FITS("iPad"), 1)),
    I("screen protector;screen protectors", (K("screen_protector"), 3), (CASE, 1)),
    I("wireless mouse;wireless mice;bluetooth mouse",
      (K("mouse") & ~SP("connectivity", "Wired"), 3),
      (K("keyboard") & SUB("combo"), 2), (K("mouse"), 1)),
    I("wireless keyboard;bluetooth keyboard", (K("keyboard") & ~SP("connectivity", "Wired"), 3),
      (K("keyboard"), 1), (CASE & SUB("keyboard"), 1)),
    I("memory card;memory cards", (K("memory_card"), 3)),
    I("sd card;sd cards", (K("memory_card") & SP("card_format", "SDXC"), 3), (K("memory_card"), 2)),
    I("micro sd card;microsd card", (K("memory_card") & SP("card_format", "microSDXC"), 3),
      (K("memory_card"), 1)),
    I("tv mount;tv wall mount;wall mount", (K("tv_mount"), 3),
      (K("action_mount", "car_mount", "stand"), 1)),
    I("gopro mount;gopro mounts", (K("action_mount") & FITS("HERO"), 3), (ACC & FITS("HERO"), 1)),
    I("camera bag;camera backpack", (K("camera_bag"), 3), (K("laptop_bag"), 1)),
    I("laptop bag;laptop backpack", (K("laptop_bag"), 3), (K("camera_bag"), 1)),
    I("camera battery;camera batteries", (K("camera_battery"), 3),
      (K("battery_charger") & FK("camera"), 2), (BATT, 1)),
    I("usb c cable;usb-c cable;type c cable", (K("usb_cable") & SP("connector_type_2", "USB-C"), 3),
      (K("lightning_cable") & SP("connector_type_2", "USB-C"), 2), (CABLES, 1)),
    I("lightning cable;iphone charging cable", (K("lightning_cable"), 3), (K("usb_cable"), 1)),
    I("optical cable;optical audio cable;toslink cable", (K("optical_cable"), 3), (CABLES, 1)),
    I("gaming headset;gaming headsets", (HP & SUB("gaming"), 3), (HP & SP("microphone", "Yes"), 1)),
    I("apple watch band;apple watch bands", (K("watch_band") & FITS("Apple Watch"), 3),
      (K("watch_band"), 1)),
    I("camera lens;camera lenses", (K("lens"), 3), (CAM & SUB("dslr", "mirrorless"), 1)),
    I("printer ink;ink cartridge", (K("ink"), 3), (K("printer"), 1)),
    I("docking station;laptop dock", (K("dock") & ~FITS("Switch"), 3), (K("dock", "adapter"), 1)),
    I("tv remote;remote control", (K("remote"), 3)),
    I("sony headphones", (HP & B("Sony") & ~SUB("earbuds"), 3), (HP & B("Sony"), 2), (HP, 1)),
    I("samsung tv;samsung tvs;samsung television", (TV & B("Samsung"), 3), (TV, 1),
      (ACC & FK("tv") & CB("Samsung"), 1)),
    I("lg tv;lg tvs", (TV & B("LG"), 3), (TV, 1)),
    I("canon camera;canon cameras", (CAM & B("Canon"), 3), (CAM, 1),
      (ACC & CB("Canon") & FK("camera"), 1)),
    I("apple watch;apple watches", (K("watch") & B("Apple"), 3), (K("watch"), 1),
      (ACC & FITS("Apple Watch"), 1)),
    I("bose headphones", (HP & B("Bose") & ~SUB("earbuds"), 3), (HP & B("Bose"), 2), (HP, 1)),
    I("jbl speaker;jbl speakers", (SPK & B("JBL"), 3), (SPK, 1), (B("JBL"), 1)),
    I("dell laptop;dell laptops", (LAP & B("Dell"), 3), (LAP, 1), (ACC & CB("Dell"), 1)),
    I("samsung phone;samsung galaxy phone", (PHONE & B("Samsung"), 3), (PHONE, 1),
      (ACC & CB("Samsung") & FK("phone"), 1)),
    I("55 inch tv;55\" tv;55 inch television", (TV & NUM("screen_size", 55, 55), 3), (TV, 1)),
    I("65 inch tv;65\" tv", (TV & NUM("screen_size", 65, 65), 3), (TV, 1)),
    I("32 inch tv;small tv", (TV & NUM("screen_size", 0, 32), 3),
      (TV & NUM("screen_size", 0, 43), 2),
      (TV, 1)),
    I("4k tv;4k tvs;4k television", (TV & SP("resolution", "4K (2160p)"), 3),
      (TV & SP("resolution", "8K (4320p)"), 2), (TV, 1)),
    I("oled tv", (TV & SP("display_type", "OLED"), 3), (TV, 1)),
    I("4k monitor;4k monitors", (MON & SP("resolution", "4K (2160p)"), 3), (MON, 1)),
    I("gaming monitor", (MON & NUM("maximum_refresh_rate", 120, 999), 3), (MON, 1)),
    I("noise cancelling headphones;noise canceling headphones", (HP & NC & ~SUB("earbuds"), 3),
      (HP & NC, 2), (HP, 1)),
    I("noise cancelling earbuds", (EARB & NC, 3), (HP & NC, 2), (HP, 1)),
    I("wireless headphones;bluetooth headphones", (HP & SP("wireless", "Yes") & ~SUB("earbuds"), 3),
      (HP & SP("wireless", "Yes"), 2), (HP, 1)),
    I("waterproof camera;underwater camera", (CAM & SP("water_resistant", "true"), 3), (CAM, 1)),
    I("4k projector", (PROJ & SP("native_resolution", "4K"), 3), (PROJ, 1)),
    I("portable projector;mini projector", (PROJ & SP("battery_powered", "Yes"), 3), (PROJ, 1)),
    I("touch screen laptop;touchscreen laptop;2 in 1 laptop", (LAP & SP("touch_screen", "Yes"), 3),
      (LAP, 1)),
    I("unlocked phone;unlocked cell phone", (PHONE & SP("carrier", "Unlocked"), 3), (PHONE, 1)),
    I("galaxy s23;samsung galaxy s23;samsung s23", (PHONE & M("Galaxy S23"), 3),
      (PHONE & M("Galaxy S"), 1), (ACC & FITS("Galaxy S23"), 1)),
    I("galaxy s23 ultra;s23 ultra", (PHONE & M("Galaxy S23 Ultra"), 3),
      (PHONE & M("Galaxy S23"), 2),
      (ACC & FITS("Galaxy S23 Ultra"), 1)),
    I("iphone 15;apple iphone 15", (PHONE & MX("iPhone 15"), 3), (PHONE & M("iPhone 15"), 2),
      (PHONE & M("iPhone"), 1), (ACC & FITS("iPhone 15"), 1)),
    I("iphone 14;apple iphone 14", (PHONE & MX("iPhone 14"), 3), (PHONE & M("iPhone 14"), 2),
      (PHONE & M("iPhone"), 1), (ACC & FITS("iPhone 14"), 1)),
    I("pixel 8;google pixel 8;pixel 8 pro", (PHONE & M("Pixel 8"), 3), (PHONE & B("Google"), 1),
      (ACC & FITS("Pixel 8"), 1)),
    I("hero11;gopro hero11;hero 11", (CAM & M("HERO11"), 3), (CAM & B("GoPro"), 1),
      (ACC & FITS("HERO11"), 1)),
    I("airpods;air pods;apple airpods", (EARB & M("AirPods"), 3), (DEV & M("AirPods"), 2),
      (ACC & FITS("AirPods"), 1), (EARB, 1)),
    I("airpods pro;airpods pro 2", (DEV & M("AirPods Pro"), 3), (DEV & M("AirPods"), 2),
      (ACC & FITS("AirPods Pro"), 1)),
    I("macbook;macbooks;apple macbook", (LAP & B("Apple"), 3), (LAP, 1),
      (ACC & FITS("MacBook"), 1)),
    I("macbook air", (LAP & M("MacBook Air"), 3), (LAP & B("Apple"), 2),
      (ACC & FITS("MacBook"), 1)),
    I("ipad air", (K("tablet") & M("iPad Air"), 3), (K("tablet") & M("iPad"), 2),
      (ACC & FITS("iPad Air"), 1)),
    I("kindle paperwhite;paperwhite", (DEV & M("Kindle Paperwhite"), 3),
      (K("ereader") & B("Amazon"), 2), (ACC & FITS("Kindle Paperwhite"), 1)),
    I("sony wh-1000xm5;wh1000xm5;sony xm5", (DEV & M("WH-1000XM5"), 3), (HP & B("Sony") & NC, 2),
      (HP & B("Sony"), 1)),
    I("echo dot;alexa;amazon echo", (DEV & M("Echo"), 3),
      (SP("voice_assistant_built_in", "Amazon Alexa"), 2), (SPK & SUB("smart"), 1)),
    I("ps5 controller;playstation 5 controller;dualsense controller",
      (CTRL & FITS("PlayStation 5"), 3), (ACC & FITS("PlayStation 5"), 1),
      (CONSOLE & M("PlayStation 5"), 1), (CTRL, 1)),
    I("xbox controller;xbox wireless controller;xbox one controller", (CTRL & FITS("Xbox"), 3),
      (ACC & FITS("Xbox"), 1), (CONSOLE & M("Xbox"), 1), (CTRL, 1)),
]
QUERY_RULES: dict[str, Rules] = {q: rules for qs, rules in INTENTS for q in qs}


def true_grade(record: dict, query: str) -> int:
    """The true relevance 0..3 of an item (its hidden record) for a query of :data:`INTENTS`."""
    return next((grade for pred, grade in QUERY_RULES[query] if pred(record)), 0)


# --------------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------------

_FEATURE = {"screen_size": "a {v} display", "storage_capacity": "{v} of storage",
            "battery_life": "up to {v} of battery life", "resolution": "{v} resolution",
            "effective_resolution": "a {v} sensor", "video_resolution": "{v} video",
            "water_resistance_rating": "{v} water resistance", "hdmi_inputs": "{v} HDMI inputs",
            "maximum_refresh_rate": "a {v} refresh rate", "brightness": "{v} of brightness",
            "wifi_standard": "{v}", "system_memory": "{v} of memory", "case_size": "a {v} case",
            "smart_platform": "the {v} smart platform", "active_noise_cancelling": "noise cancelling",
            "display_type": "a {v} panel", "maximum_output_power": "{v} of power",
            "cable_length": "a {v} length", "maximum_resolution": "{v} video support",
            "connectivity": "{v} connectivity", "battery_capacity": "{v} of capacity"}
_GENERIC = ["a sleek design", "reliable performance", "easy setup", "a durable build"]
_EXTRA = {  # sentences that carry lexical traps
    "phone": ["Case and charger sold separately.", "Works with Qi wireless chargers."],
    "tablet": ["Case, keyboard and pencil sold separately."], "camera": ["Memory card sold separately."],
    "laptop": ["A quiet cooling fan keeps it running cool.", "Connect a monitor over HDMI or USB-C."],
    "tv": ["Connect a game console, soundbar and streaming stick over HDMI.", "Wall mount sold separately."],
    "monitor": ["HDMI cable included."], "projector": ["A quiet fan keeps noise down during movies."],
    "speaker": ["Stream music from your phone, tablet or TV."],
    "headphones": ["Pairs with your iPhone, Android phone or laptop."],
    "console": ["Includes one wireless controller and an HDMI cable."], "mp3": ["Headphones included."],
    "printer": ["Print from your iPhone or Android phone."], "router": ["Connect phones, laptops and TVs."],
    "case": ["Protect your {target} from drops and scratches.", "Raised edges protect the camera."],
    "hdmi_cable": ["Connect a TV, monitor, projector or game console.", "Supports 4K video with HDR."],
    "batteries": ["Powers remotes, game controllers, cameras, toys and flashlights."],
    "controller": ["Enjoy wireless play with responsive buttons and rumble."],
    "computer_fan": ["Keeps your gaming PC cool and quiet."], "remote": ["Batteries included."],
    "desk_fan": ["Stay cool at your desk or next to your computer."],
    "memory_card": ["Ideal for cameras, drones, phones and Nintendo Switch."],
    "charger": ["Fast charges phones, tablets and earbuds."], "adapter": ["Mirror your laptop to a TV."],
    "screen_protector": ["Shields the screen of your {target} from scratches."],
}
_DEV_SENT = ["The {brand} {short} offers {f0}.", "Enjoy {f0} and {f1}.", "{a} {noun} with {f0}.",
             "Featuring {f0}, {f1} and {f2}, this {noun} is made for everyday use.",
             "Get {f1} with the {short}."]
_ACC_SENT = ["This {noun} from {brand} offers {f0}.", "{a} {noun} with {f0} and {f1}.",
             "Designed for {target}.", "Compatible with {compat}.",
             "The {brand} {short} works with {cbrand} devices."]
_UPPER = "ABCDEFGHJKLMNPQRSTUVWXYZ"
_CODE_PREFIX = {"Insignia": "NS-", "Dynex": "DX-", "Rocketfish": "RF-"}


def _code(rng: np.random.Generator, brand: str, kind: str) -> str:
    """A model number in the brand's style (MPUF3LL/A, SM-S911UZKAXAA, NS-HG06501, DLM1310/10)."""
    def c(n: int) -> str:
        return "".join(_UPPER[int(i)] for i in rng.integers(0, len(_UPPER), n))

    def d(n: int) -> str:
        return "".join(str(int(i)) for i in rng.integers(0, 10, n))

    if brand == "Apple":
        return f"M{c(3)}{d(1)}LL/A"
    if brand == "Samsung" and kind in ("phone", "tablet", "watch"):
        return f"SM-{c(1)}{d(3)}U{c(2)}AXAA"
    if brand in _CODE_PREFIX:
        return f"{_CODE_PREFIX[brand]}{c(2)}{d(5)}"
    styles = [f"{c(3)}{d(4)}/{d(2)}", f"{c(2)}{d(3)}{c(1)}-{c(1)}", f"{d(3)}-{d(5)}"]
    return styles[sum(map(ord, brand)) % 3]


def _vars(opt: str, carrier: str = "") -> dict[str, str]:
    """What a variant's option says: storage, memory, case size, cellular, battery size, pack."""
    v = dict(opt=opt, carrier=carrier, storage="", memory="", mm="", cellsize="", pack="1",
             cell="Yes" if "Cellular" in opt or "LTE" in opt else "No")
    if m := re.search(r"(\d+)\s?(GB|TB) SSD", opt) or re.search(r"(\d+)\s?(GB|TB)(?! Memory)", opt):
        v["storage"] = f"{m[1]} {'gigabytes' if m[2] == 'GB' else 'terabyte'}"
    for key, pattern, fmt in (("memory", r"(\d+)GB Memory", "{} gigabytes"),
                              ("mm", r"(\d+)mm", "{} millimeters"),
                              ("cellsize", r"^(AAA|AA|9V|C|D) ", "{}"),
                              ("pack", r"\((\d+)-Pack\)", "{}")):
        if m := re.search(pattern, opt):
            v[key] = fmt.format(m[1])
    return v


def _description(rng: np.random.Generator, rec: dict, target: str) -> str:
    """1-4 template sentences (features from the specs, the devices it fits, trap sentences)."""
    if rng.random() < 0.1:
        return ""
    fs = [_FEATURE[k].format(v=v.replace(" inches", '"')) for k, v in rec["specs"].items()
          if k in _FEATURE and v not in NEGATIVE]
    fs = [fs[int(i)] for i in rng.permutation(len(fs))]
    f = fs + [_GENERIC[int(i)] for i in rng.permutation(len(_GENERIC))][: 3 - len(fs)]
    fill = {"brand": rec["brand"], "short": rec["short"], "noun": rec["noun"], "target": target,
            "compat": ", ".join(rec["compat"][:3]), "cbrand": rec["cbrand"], "f0": f[0], "f1": f[1],
            "f2": f[2], "a": "An" if re.match(r"[aeioAEIO]|HDMI", rec["noun"]) else "A"}
    pool = _DEV_SENT if rec["role"] == "device" else _ACC_SENT[: 5 if rec["compat"] else 2]
    pool = pool + [s for s in _EXTRA.get(rec["kind"], []) if target or "{target}" not in s]
    n = int(rng.integers(1, min(4, len(pool)) + 1))
    return " ".join(pool[int(i)].format(**fill) for i in rng.choice(len(pool), n, replace=False))


def _attributes(rng: np.random.Generator, specs: dict[str, str]) -> str:
    """4-15 of the item's spec pairs (an export drops some); ~5% of the cells are empty."""
    if rng.random() < 0.05:
        return ""
    keys, n = list(specs), int(rng.integers(4, 16))
    if len(keys) > n:
        fixed = [k for k in keys if k in ("brand_compatibility", "device_compatibility")]
        rest = [k for k in keys if k not in fixed]
        picked = rng.choice(len(rest), n - len(fixed), replace=False)
        keep = set(fixed) | {rest[int(i)] for i in picked}
        keys = [k for k in keys if k in keep]
    return "|".join(f"{k}:{specs[k]}" for k in keys)


def _combos(m: dict) -> list[list[tuple]]:
    """A model's variants in groups: a device's (colour, option, carrier, refurbished), new ones
    first; an accessory's (index of the device it fits or -1, colour, option), per device."""
    cols, opts = m["colours"] or [""], m["options"] or [""]
    if m["kind"] in KINDS:
        carriers = CARRIERS if m["kind"] == "phone" else ("",)
        return [[(c, o, k, r) for c in cols for o in opts for k in carriers] for r in (False, True)]
    targets = [-1]
    if m["fits"].startswith("dev:"):
        kinds, _, brand = m["fits"][4:].partition("@")
        targets = [i for i, d in enumerate(DEVICE_MODELS)
                   if d["kind"] in kinds.split(",") and brand in ("", d["brand"])]
    return [[(t, c, o) for c in cols for o in opts] for t in targets]


def _item(rng: np.random.Generator, m: dict, combo: tuple) -> tuple[dict, str]:
    """One item's hidden record (with its title, colour, type, price, full specs) and the text
    naming the device(s) it fits."""
    device = m["kind"] in KINDS
    kind = KINDS[m["kind"]] if device else ACC_KINDS[m["kind"]]
    colour, opt = combo[1 - device : 3 - device]
    carrier, refurb = combo[2:] if device else ("", False)
    specs = {k: _unit(k, v.format(**_vars(opt, carrier))) for k, v in m["specs"].items()}
    specs = {k: v for k, v in specs.items() if v}
    rec = {"role": "device" if device else "accessory", "kind": m["kind"], "sub": m["sub"],
           "brand": m["brand"], "short": m["short"], "noun": kind["noun"], "compat": (),
           "ckinds": (), "cbrand": "", "color": colour,
           "type": SUB_TYPE.get(f"{m['kind']}/{m['sub']}", kind["type"])}
    factor = 1 + (0.2 if device else 0.1) * m["options"].index(opt) if m["options"] else 1.0
    target = ""
    if device:
        body = kind["title"].format(short=m["short"], desc=m["desc"], opt=opt, carrier=carrier,
                                    sz=specs.get("screen_size", "").split(" ")[0])
        body = re.sub(r"\s+", " ", body.replace(" -  -", " -")).strip(" -")
        rec["title"] = f"{m['brand']} - {'Geek Squad Certified Refurbished ' * refurb}{body}"
        rec["title"] += f" - {colour}" if kind["show"] and colour else ""
        size = float(specs["screen_size"].split(" ")[0]) if m["kind"] in ("tv", "monitor") else 0.0
        factor = (size / 50) ** 1.7 if m["kind"] == "tv" else factor
        h, w = (0.55 * size, 0.4 * size) if size else DIMS[m["kind"]]
        specs.update(product_height=f"{h * rng.uniform(0.85, 1.15):.1f} inches",
                     product_weight=f"{w * rng.uniform(0.85, 1.15):.1f} pounds")
        if refurb:
            specs["condition"], factor = "Refurbished", factor * 0.8
    else:
        if combo[0] >= 0:
            d = DEVICE_MODELS[combo[0]]
            members, rec["cbrand"] = [d], d["brand"]
            target = d["short"] if d["short"].startswith(d["brand"]) else \
                f"{d['brand']} {d['short']}"
        elif m["fits"]:
            target, pred, rec["cbrand"] = GROUPS[m["fits"][4:]]
            members = [d for d in DEVICE_MODELS if pred(d)]
        else:
            members = []
        rec["compat"] = tuple(dict.fromkeys(d["short"] for d in members))
        rec["ckinds"] = tuple(sorted({d["kind"] for d in members}))
        if rec["cbrand"] or rng.random() < 0.5:
            specs["brand_compatibility"] = rec["cbrand"] or "Universal"
        if rec["compat"]:
            specs["device_compatibility"] = ", ".join(rec["compat"][:4])
        rec["title"] = f"{m['brand']} - {m['short'].replace('{opt}', opt).strip()}" + \
            (f" for {target}" if target else "") + (f" - {colour}" if colour else "")
        rec["short"] = m["short"].replace("{opt}", opt).strip()
        specs["product_height"] = f"{rng.uniform(0.2, 12):.1f} inches"
    specs.update(color=colour or "Not applicable", model_number=_code(rng, m["brand"], m["kind"]))
    rec["specs"] = specs
    rec["price"] = float(np.floor(m["price"] * factor * rng.lognormal(0, 0.05)) + 0.99)
    return rec, target


def make_catalogue(n_items: int = 8000, seed: int = 0) -> tuple[pd.DataFrame, list[dict]]:
    """The items (as items.csv holds them) and their hidden records, as `generate` makes them."""
    return _make_items(np.random.default_rng(seed), n_items)


def _make_items(rng: np.random.Generator, n_items: int) -> tuple[pd.DataFrame, list[dict]]:
    """Families of 1-6 variants of a model drawn by kind share. A model whose variants are all
    made drops out (devices first come back refurbished); only an exhausted catalogue repeats."""
    sides = []
    for models, kinds in ((DEVICE_MODELS, KINDS), (ACCESSORY_LINES, ACC_KINDS)):
        per_kind = {k: sum(m["kind"] == k for m in models) for k in kinds}
        w = np.array([kinds[m["kind"]]["share"] / per_kind[m["kind"]] for m in models])
        sides.append((models, w, [_combos(m) for m in models]))
    made: list[tuple[dict, str]] = []
    n_dev = 0
    while len(made) < n_items:
        device = n_dev < DEVICE_SHARE * (len(made) + 1)
        models, w, left = sides[0 if device else 1]
        live = np.array([bool(gs[0]) if device else any(gs) for gs in left])  # new devices first
        if not live.any():
            live = np.array([any(gs) for gs in left])
        if not live.any():
            left[:] = [_combos(m) for m in models]
            live[:] = True
        i = int(rng.choice(len(w), p=w * live / (w * live).sum()))
        groups = [g for g in left[i] if g]
        g = groups[0] if device else groups[int(rng.integers(len(groups)))]
        take = rng.choice(len(g), min(len(g), int(rng.integers(1, 7))), replace=False)
        take = sorted(take, reverse=True)
        fam = [_item(rng, models[i], g.pop(int(j))) for j in take][: n_items - len(made)]
        n_dev += len(fam) * device
        made += fam
    made = [made[int(i)] for i in rng.permutation(len(made))]
    skus = np.sort(rng.choice(9_000_000, len(made), replace=False)) + 1_000_000
    rows = []
    for sku, (rec, target) in zip(skus, made):
        rec["item_id"] = f"EL-{sku}"
        rows.append({"item_id": rec["item_id"], "title": rec["title"],
                     "description": _description(rng, rec, target), "brand": rec["brand"],
                     "color": rec["color"], "type": rec["type"], "price": rec["price"],
                     "attributes": _attributes(rng, rec["specs"])})
    return pd.DataFrame(rows), [rec for rec, _ in made]


_WORD = re.compile(r"[0-9]+(?:[./][0-9]+)*|[^\W_]+(?:'[^\W_]+)?", re.UNICODE)


def words(text: str) -> list[str]:
    """Lower-cased words with a crude plural strip (the simulated site's lexical matching)."""
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
            for w in _WORD.findall(str(text).lower())]


def _lexical(items: pd.DataFrame) -> Callable[[str], np.ndarray]:
    """The simulated site's match: the share of query words in the title (1) or elsewhere (0.5)."""
    index: dict[str, tuple[list[int], list[int]]] = {}
    other = items[["description", "brand", "type", "attributes"]].agg(" ".join, axis=1)
    for col, texts in enumerate((items["title"], other)):
        for i, t in enumerate(texts):
            for w in set(words(t)):
                index.setdefault(w, ([], []))[col].append(i)

    def score(q: str) -> np.ndarray:
        qw = sorted(set(words(q)))
        s = np.zeros(len(items))
        for w in qw:
            hit = np.zeros(len(items))
            title, rest = index.get(w, ([], []))
            hit[rest] = 0.5
            hit[title] = 1.0
            s += hit
        return s / max(len(qw), 1)
    return score


def generate(out_dir, n_items: int = 8000, n_queries: int = 140, seed: int = 0) -> dict:
    """Write items.csv, interactions.csv and judgments.csv to `out_dir`; return paths, counts."""
    rng = np.random.default_rng(seed)
    os.makedirs(out_dir, exist_ok=True)
    items, recs = _make_items(rng, n_items)
    n, lexical = len(items), _lexical(items)

    # Queries of the intents the catalogue answers (>= 2 exact items): one phrasing of each first.
    grades = {}
    for qs, _ in INTENTS:
        g = np.array([true_grade(r, qs[0]) for r in recs])
        if (g == 3).sum() >= 2:
            grades.update(dict.fromkeys(qs, g))
    order = [qs for i in rng.permutation(len(INTENTS)) if (qs := INTENTS[int(i)][0])[0] in grades]
    first = [qs[int(rng.integers(len(qs)))] for qs in order]
    rest = [q for qs in order for q in qs if q not in first]
    queries = (first + [rest[int(i)] for i in rng.permutation(len(rest))])[:n_queries]

    q_col, i_col, l_col, j_rows = [], [], [], []
    for q in queries:
        g, lex = grades[q], lexical(q)
        # A mediocre site: some relevant results, then lexical look-alikes (accessories naming the
        # query's device, other items of a brand ...), then a few random ones; each ranked noisily.
        k = min(int(rng.integers(25, 46)), n)
        n_rand = int(rng.integers(1, 5))
        order_ = np.argsort(-(lex + rng.normal(0, 0.3, n)), kind="stable")
        shown = [int(j) for j in order_ if g[j] >= 2][: round(rng.uniform(0.4, 0.8) * (k - n_rand))]
        shown += [int(j) for j in order_ if g[j] <= 1 and lex[j] > 0][: k - n_rand - len(shown)]
        seen = set(shown)
        shown += [int(j) for j in rng.permutation(n) if j not in seen][: k - len(shown)]
        sa = np.array(shown)
        # Three raters: noisy around the truth, sometimes fooled by a title with every query word.
        fooled = ((lex[sa] >= 0.999) & (g[sa] <= 1))[:, None] & (rng.random((k, 3)) < 0.25)
        r = np.clip(np.rint(g[sa][:, None] + rng.normal(0, 0.6, (k, 3)) + 1.2 * fooled), 0, 3)
        q_col += [q] * k
        i_col += [recs[j]["item_id"] for j in shown]
        l_col += np.median(r, axis=1).astype(int).tolist()
        j_rows += [(q, recs[int(j)]["item_id"], int(g[j])) for j in np.flatnonzero(g >= 1)]
    inter = pd.DataFrame({"query": q_col, "item_id": i_col, "label": l_col})
    judg = pd.DataFrame(j_rows, columns=["query", "item_id", "grade"])

    paths = {name: os.path.join(out_dir, f"{name}.csv")
             for name in ("items", "interactions", "judgments")}
    for name, df in (("items", items), ("interactions", inter), ("judgments", judg)):
        tmp = paths[name] + ".tmp"
        df.to_csv(tmp, index=False)
        os.replace(tmp, paths[name])
    n_dev = sum(r["role"] == "device" for r in recs)
    return {"paths": paths, "n_items": n, "n_devices": n_dev, "n_accessories": n - n_dev,
            "n_queries": len(queries), "n_interactions": len(inter), "n_judgments": len(judg),
            "labels": {int(k): int(v) for k, v in sorted(inter["label"].value_counts().items())}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--items", type=int, default=8000)
    ap.add_argument("--queries", type=int, default=140)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    info = generate(args.out, n_items=args.items, n_queries=args.queries, seed=args.seed)
    print(f"wrote {info['n_items']} items ({info['n_devices']} devices, "
          f"{info['n_accessories']} accessories), {info['n_interactions']} rated results for "
          f"{info['n_queries']} queries and {info['n_judgments']} judgments to {args.out} "
          f"in {time.perf_counter() - t0:.1f}s")
    print("labels: " + ", ".join(f"{k}={v}" for k, v in info["labels"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
